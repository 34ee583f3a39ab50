"""The meta.k8s.io Accept negotiation of the embedded server, as pure functions."""

from __future__ import annotations

import datetime

import pytest

from pyinformers.testing.apiserver._negotiation import (
    FULL,
    PARTIAL,
    PARTIAL_LIST,
    TABLE,
    Form,
    NotAcceptable,
    content_type,
    human_duration,
    jsonpath_values,
    negotiate,
    printer_columns,
    table,
    transform_answer,
)

NOW = datetime.datetime(2026, 1, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)


def obj(name: str, **spec) -> dict:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Other", "status": "False"},
            ]
        },
    }


def a_list(*items) -> dict:
    return {
        "apiVersion": "example.com/v1",
        "kind": "WidgetList",
        "metadata": {"resourceVersion": "9", "continue": "c"},
        "items": list(items),
    }


@pytest.mark.parametrize(
    "accept, form",
    [
        (None, FULL),
        ("", FULL),
        ("application/json", FULL),
        ("*/*", FULL),
        ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", PARTIAL),
        ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", PARTIAL_LIST),
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
            TABLE,
        ),
        (
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
            PARTIAL_LIST,
        ),
        ("application/json;as=Table;g=meta.k8s.io;v=v1beta1", Form("Table", "v1beta1")),
        ("application/json;as=Foo;g=meta.k8s.io;v=v1, application/json", FULL),
    ],
)
def test_the_first_servable_entry_of_accept_decides_the_form(accept, form):
    assert negotiate(accept) == form


def test_an_accept_with_nothing_servable_is_not_acceptable():
    with pytest.raises(NotAcceptable):
        negotiate("application/vnd.kubernetes.protobuf")
    with pytest.raises(NotAcceptable):
        negotiate("application/json;as=Table;g=other.io;v=v1")


def test_a_transformed_answer_is_plain_json_by_its_content_type():
    assert content_type(FULL) == "application/json"
    assert content_type(TABLE) == "application/json"  # as kube-apiserver 1.36 answers


def test_a_list_as_partial_object_metadata_keeps_the_list_metadata_and_only_each_items_metadata():
    answer = transform_answer(a_list(obj("a"), obj("b")), PARTIAL_LIST)
    assert (
        answer["kind"] == "PartialObjectMetadataList" and answer["apiVersion"] == "meta.k8s.io/v1"
    )
    assert answer["metadata"] == {"resourceVersion": "9", "continue": "c"}
    assert [i["metadata"]["name"] for i in answer["items"]] == ["a", "b"]
    assert all(
        set(i) == {"kind", "apiVersion", "metadata"} and i["kind"] == "PartialObjectMetadata"
        for i in answer["items"]
    )


def test_the_object_form_of_a_list_and_the_list_form_of_an_object_are_not_acceptable():
    with pytest.raises(NotAcceptable, match="is a list"):
        transform_answer(a_list(), PARTIAL)
    with pytest.raises(NotAcceptable, match="not a list"):
        transform_answer(obj("a"), PARTIAL_LIST)


def test_a_status_answer_is_never_transformed():
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}
    assert transform_answer(status, PARTIAL) is status


def test_a_crds_printer_columns_come_after_name_with_their_cells_typed():
    crd = {
        "spec": {
            "versions": [
                {
                    "name": "v1",
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {
                            "name": "Color",
                            "type": "string",
                            "jsonPath": ".spec.color",
                            "priority": 1,
                            "description": "the color",
                        },
                        {
                            "name": "Ready",
                            "type": "string",
                            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                        },
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                }
            ]
        }
    }
    columns = printer_columns(crd, "v1")
    answer = table(a_list(obj("a", size=3, color="red"), obj("b")), columns, now=NOW)
    assert [c["name"] for c in answer["columnDefinitions"]] == [
        "Name",
        "Size",
        "Color",
        "Ready",
        "Age",
    ]
    assert answer["columnDefinitions"][2] == {
        "name": "Color",
        "type": "string",
        "format": "",
        "description": "the color",
        "priority": 1,
    }
    assert (
        answer["columnDefinitions"][1]["description"]
        == "Custom resource definition column (in JSONPath format): .spec.size"
    )
    assert [r["cells"] for r in answer["rows"]] == [
        ["a", 3, "red", "True", "60m"],
        ["b", None, None, "True", "60m"],
    ]
    assert answer["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert answer["metadata"] == {"resourceVersion": "9", "continue": "c"}


def test_a_crd_version_without_printer_columns_shows_age():
    columns = printer_columns({"spec": {"versions": [{"name": "v1"}]}}, "v1")
    assert [(c["name"], c["type"]) for c in columns] == [("Name", "string"), ("Age", "date")]


def test_other_kinds_show_name_and_created_at_as_rfc3339():
    answer = table(obj("a"), printer_columns(None, ""), include_object="None", now=NOW)
    assert [c["name"] for c in answer["columnDefinitions"]] == ["Name", "Created At"]
    assert answer["rows"] == [{"cells": ["a", "2026-01-01T00:00:00Z"], "object": None}]
    assert answer["metadata"] == {"resourceVersion": "7"}


def test_include_object_object_puts_the_whole_object_in_the_row():
    whole = obj("a")
    assert (
        table(whole, printer_columns(None, ""), include_object="Object", now=NOW)["rows"][0][
            "object"
        ]
        is whole
    )
    with pytest.raises(ValueError, match="includeObject"):
        table(whole, printer_columns(None, ""), include_object="All")


@pytest.mark.parametrize(
    "path, values",
    [
        (".spec.size", [3]),
        (".spec.missing", []),
        ("{.spec.size}", [3]),
        (".status.conditions[1].type", ["Other"]),
        (".status.conditions[*].type", ["Ready", "Other"]),
        (".status.conditions[?(@.type=='Other')].status", ["False"]),
        (".metadata.name", ["a"]),
        (".spec.size.x", []),
    ],
)
def test_jsonpath_values(path, values):
    assert jsonpath_values(obj("a", size=3), path) == values


@pytest.mark.parametrize(
    "seconds, text",
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 60, "5h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (100 * 86400, "100d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_duration_reads_as_kubectl_shows_ages(seconds, text):
    assert human_duration(seconds) == text
