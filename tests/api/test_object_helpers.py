"""Finalizers, RFC 3339 times, object references and ignore_not_found on plain dicts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.api import AlreadyExists, Conflict, NotFound
from pyinformers.api.meta import (
    add_finalizer,
    contains_finalizer,
    format_micro_time,
    format_time,
    ignore_already_exists,
    ignore_not_found,
    object_reference,
    parse_time,
    parse_time_seconds,
    remove_finalizer,
)

F = "example.com/cleanup"


def test_adding_a_finalizer_twice_changes_the_object_once():
    obj: dict = {"metadata": {"name": "a"}}
    assert add_finalizer(obj, F)
    assert not add_finalizer(obj, F)
    assert obj["metadata"]["finalizers"] == [F]
    assert contains_finalizer(obj, F)


def test_removing_a_finalizer_keeps_the_others_and_is_idempotent():
    obj: dict = {"metadata": {"name": "a", "finalizers": ["kubernetes", F, "other.io/x"]}}
    assert remove_finalizer(obj, F)
    assert not remove_finalizer(obj, F)
    assert obj["metadata"]["finalizers"] == ["kubernetes", "other.io/x"]
    assert not remove_finalizer({"metadata": {}}, F)


@pytest.mark.parametrize(
    "bad, says",
    [
        ("cleanup", "not domain-qualified"),
        ("Example.com/cleanup", "must be a DNS subdomain"),
        ("example.com/", "the name ''"),
        ("example.com/-x", "starting and ending"),
        ("example.com/" + "x" * 64, "at most 63"),
        ("", "non-empty string"),
        (None, "non-empty string"),
    ],
)
def test_a_finalizer_that_is_not_a_qualified_name_is_refused_and_nothing_changes(bad, says):
    obj: dict = {"metadata": {"name": "a"}}
    with pytest.raises(ValueError, match=says):
        add_finalizer(obj, bad)
    assert obj == {"metadata": {"name": "a"}}


def test_times_are_written_as_the_api_server_writes_them():
    t = 1_767_225_600.25
    assert format_time(t) == "2026-01-01T00:00:00Z"
    assert format_micro_time(t) == "2026-01-01T00:00:00.250000Z"
    assert (
        format_time(datetime(2026, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))))
        == "2026-01-01T00:00:00Z"
    )


def test_any_rfc3339_time_parses_to_utc_including_nanoseconds_and_offsets():
    assert parse_time("2026-01-01T00:00:00Z") == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert parse_time("2026-01-01T00:00:00.123456789Z").microsecond == 123456
    assert parse_time("2026-01-01T02:00:00+02:00") == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert parse_time_seconds("2026-01-01T00:00:00.5Z") == 1_767_225_600.5
    assert parse_time_seconds(None) is None and parse_time_seconds("") is None


@pytest.mark.parametrize(
    "bad", ["2026-01-01", "2026-01-01T00:00:00", "2026-13-01T00:00:00Z", "yesterday"]
)
def test_a_malformed_time_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        parse_time(bad)


def test_a_naive_datetime_is_refused_rather_than_guessed():
    with pytest.raises(ValueError, match="naive datetime"):
        format_time(datetime(2026, 1, 1))


@given(st.integers(0, 4_000_000_000), st.integers(0, 999_999))
def test_a_micro_time_round_trips_exactly(seconds, micros):
    text = format_micro_time(
        datetime.fromtimestamp(seconds, tz=timezone.utc) + timedelta(microseconds=micros)
    )
    assert format_micro_time(parse_time(text)) == text


def test_an_object_reference_names_the_object_and_its_version():
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"a": "b"},
        },
        "spec": {"replicas": 1},
    }
    assert object_reference(obj) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "namespace": "ns",
        "uid": "u1",
        "resourceVersion": "7",
    }
    assert object_reference(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, field_path="spec"
    ) == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "n",
        "fieldPath": "spec",
    }


def test_an_object_without_kind_cannot_be_referenced():
    with pytest.raises(ValueError, match="needs kind and apiVersion"):
        object_reference({"metadata": {"name": "x"}})


def test_ignore_not_found_swallows_only_not_found():
    with ignore_not_found() as ignored:
        raise NotFound("gone", code=404, reason="NotFound")
    assert isinstance(ignored.ignored, NotFound)
    with pytest.raises(Conflict):
        with ignore_not_found():
            raise Conflict("stale", code=409, reason="Conflict")
    with ignore_already_exists() as ignored:
        raise AlreadyExists("there", code=409, reason="AlreadyExists")
    assert ignored.ignored is not None
    with ignore_already_exists() as ignored:
        pass
    assert ignored.ignored is None
