"""The cache mutation detector: fingerprints, scopes, reports."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.cache._mutation import (
    ENV_VAR,
    MutationDetector,
    clear_mutations,
    detector_enabled,
    first_difference,
    mutation_scope,
    mutations,
    set_default,
)


@pytest.fixture(autouse=True)
def _no_leftover_mutations():
    clear_mutations()
    yield
    clear_mutations()


def configmap(name: str, **data: str) -> dict:
    return {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "labels": {"a": "1"}},
        "data": dict(data),
    }


def test_an_unchanged_object_is_not_reported():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web", color="blue")
    detector.record("ns/web", obj)
    assert detector.check("ns/web", obj, "someone") is None
    assert mutations() == []


def test_a_handler_that_changes_its_object_is_named_with_the_key_and_the_path():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web", color="blue")
    detector.record("ns/web", obj)

    def on_add(o, initial):
        o["metadata"]["labels"]["x"] = "y"

    wrapped = detector.wrap_handler(
        on_add, "handler 1 of v1/configmaps (on_add)", lambda o: "ns/" + o["metadata"]["name"]
    )
    wrapped(obj, False)
    [found] = mutations()
    assert (found.informer, found.key, found.path, found.culprit) == (
        "v1/configmaps",
        "ns/web",
        "metadata.labels.x",
        "handler 1 of v1/configmaps (on_add)",
    )
    assert str(found).startswith(
        "cache mutation: v1/configmaps ns/web changed in place at metadata.labels.x by handler 1"
    )
    assert "deep_copy" in str(found)


def test_a_mutation_is_reported_once():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web", color="blue")
    detector.record("ns/web", obj)
    obj["data"]["color"] = "red"
    assert detector.check("ns/web", obj, "a") is not None
    assert detector.check("ns/web", obj, "b") is None
    assert len(mutations()) == 1


def test_reads_in_a_scope_are_checked_when_the_scope_ends_and_blamed_on_it():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web", color="blue")
    detector.record("ns/web", obj)
    with mutation_scope("reconcile of Demo (ns/web)"):
        detector.note_read("ns/web", obj)
        obj["data"]["color"] = "red"
        assert mutations() == []  # not before the scope ends
    [found] = mutations()
    assert found.culprit == "reconcile of Demo (ns/web)" and found.path == "data.color"


def test_reads_outside_any_scope_are_not_collected():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web")
    detector.record("ns/web", obj)
    detector.note_read("ns/web", obj)  # no scope: nothing kept, nothing checked
    obj["data"]["x"] = "1"
    assert mutations() == []


def test_scopes_are_per_thread():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web")
    detector.record("ns/web", obj)

    def elsewhere():
        detector.note_read("ns/web", obj)  # another thread, no scope of its own

    with mutation_scope("mine"):
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
    obj["data"]["x"] = "1"
    assert mutations() == []


def test_an_object_changed_by_nobody_in_scope_is_found_when_it_is_replaced():
    detector = MutationDetector("v1/configmaps")
    old = configmap("web", color="blue")
    detector.record("ns/web", old)
    old["data"]["color"] = "red"
    detector.record("ns/web", configmap("web", color="green"), old)
    [found] = mutations()
    assert found.path == "data.color" and "replaced" in found.culprit


def test_an_object_changed_then_deleted_is_found_at_the_delete():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web", color="blue")
    detector.record("ns/web", obj)
    del obj["metadata"]["labels"]
    detector.forget("ns/web", obj)
    [found] = mutations()
    assert found.path == "metadata.labels" and "deleted" in found.culprit
    assert len(detector) == 0


def test_a_sweep_checks_every_cached_object():
    detector = MutationDetector("v1/configmaps")
    objs = [configmap(f"c{i}") for i in range(5)]
    for o in objs:
        detector.record("ns/" + o["metadata"]["name"], o)
    objs[3]["data"]["new"] = "1"
    found = detector.check_all()
    assert [m.key for m in found] == ["ns/c3"] and found[0].path == "data.new"


def test_an_older_version_handed_to_a_handler_is_not_checked_against_the_newer_fingerprint():
    detector = MutationDetector("v1/configmaps")
    old, new = configmap("web", color="blue"), configmap("web", color="green")
    detector.record("ns/web", old)
    detector.record("ns/web", new, old)
    assert detector.check("ns/web", old, "x") is None


def test_an_object_that_is_not_json_is_not_fingerprinted():
    detector = MutationDetector("v1/configmaps")
    obj = configmap("web")
    obj["extra"] = object()
    detector.record("ns/web", obj)
    assert len(detector) == 0 and detector.check("ns/web", obj, "x") is None


def test_the_callback_hears_of_each_mutation():
    heard = []
    detector = MutationDetector("v1/configmaps", on_mutation=heard.append)
    obj = configmap("web")
    detector.record("ns/web", obj)
    obj["data"]["x"] = "1"
    detector.check_all()
    assert [m.path for m in heard] == ["data.x"]


def test_enabled_follows_the_option_then_the_default_then_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    set_default(None)
    try:
        assert detector_enabled() is False
        monkeypatch.setenv(ENV_VAR, "1")
        assert detector_enabled() is True
        assert detector_enabled(False) is False
        set_default(False)
        assert detector_enabled() is False
        assert detector_enabled(True) is True
    finally:
        set_default(None)


@pytest.mark.parametrize(
    "before, after, path",
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}, "a.b[1]"),
        ({"a": [1]}, {"a": [1, 2]}, "a[1]"),
        ({"a": 1}, {"a": 1, "b": 2}, "b"),
        ({"a": 1, "b": 2}, {"a": 1}, "b"),
        ({"a": 1}, {"a": "1"}, "a"),
        (
            {"spec": {"containers": [{"image": "x"}]}},
            {"spec": {"containers": [{"image": "y"}]}},
            "spec.containers[0].image",
        ),
    ],
)
def test_first_difference_names_the_first_path_that_differs(before, after, path):
    assert first_difference(before, after) == path


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=15,
)


def _same_json(a, b):
    # Equal as JSON: Python's == takes False for 0 and True for 1, JSON does not.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@given(json_values, json_values)
def test_first_difference_is_none_exactly_when_the_values_are_equal(a, b):
    assert (first_difference(a, b) is None) == _same_json(a, b)


def test_false_and_zero_differ_as_json_values_do():
    assert first_difference([None, False, False], [None, False, 0]) == "[2]"
    assert first_difference({"ready": True}, {"ready": 1}) == "ready"
