"""The meta.k8s.io Accept negotiation on either server: PartialObjectMetadata, its list, Tables, kubectl get.

Run with ``--k8s-server=both`` to hold the embedded server to kube-apiserver.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import threading
from typing import Any

import orjson
import pytest

from pyinformers.api import ResourceClient
from pyinformers.api._metadata import (
    ACCEPT_PARTIAL_OBJECT_METADATA,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
    ACCEPT_TABLE,
    is_partial_object_metadata,
)
from pyinformers.api._transport import release, send
from pyinformers.cache import SharedInformerFactory
from pyinformers.resources import CONFIGMAPS, SECRETS
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(180)
WAIT = 60.0


def _get(k8s: Any, path: str, accept: str, query: tuple = ()) -> tuple[int, str, Any]:
    response = send(
        k8s.api_client(), "GET", path, list(query), headers={"Accept": accept}, timeout=30
    )
    try:
        data = response.read()
        return (
            response.status,
            response.headers.get("Content-Type", ""),
            orjson.loads(data) if data else None,
        )
    finally:
        release(response, reusable=True)


def _seed(k8s: Any) -> None:
    secrets_client = ResourceClient(k8s.api_client(), SECRETS)
    for i in range(3):
        secrets_client.create(
            {
                "metadata": {"name": f"s{i}", "namespace": k8s.namespace, "labels": {"i": str(i)}},
                "stringData": {"password": "hunter2"},
            }
        )


def test_a_list_as_partial_object_metadata_carries_only_each_objects_metadata(k8s):
    _seed(k8s)
    status, content_type, body = _get(
        k8s, f"/api/v1/namespaces/{k8s.namespace}/secrets", ACCEPT_PARTIAL_OBJECT_METADATA_LIST
    )
    assert status == 200
    assert content_type == "application/json"
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert body["metadata"]["resourceVersion"]
    items = sorted(body["items"], key=lambda i: i["metadata"]["name"])
    assert [i["metadata"]["name"] for i in items] == ["s0", "s1", "s2"]
    for item in items:
        assert set(item) == {"kind", "apiVersion", "metadata"}
        assert (item["kind"], item["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert item["metadata"]["namespace"] == k8s.namespace and item["metadata"]["uid"]


def test_one_object_as_partial_object_metadata(k8s):
    _seed(k8s)
    status, content_type, body = _get(
        k8s, f"/api/v1/namespaces/{k8s.namespace}/secrets/s1", ACCEPT_PARTIAL_OBJECT_METADATA
    )
    assert status == 200 and content_type == "application/json"
    assert set(body) == {"kind", "apiVersion", "metadata"} and body["metadata"]["labels"] == {
        "i": "1"
    }


def test_the_object_form_of_a_list_and_the_list_form_of_an_object_are_not_acceptable(k8s):
    _seed(k8s)
    status, _, body = _get(
        k8s, f"/api/v1/namespaces/{k8s.namespace}/secrets", ACCEPT_PARTIAL_OBJECT_METADATA
    )
    assert (status, body["reason"]) == (406, "NotAcceptable")
    status, _, body = _get(
        k8s, f"/api/v1/namespaces/{k8s.namespace}/secrets/s1", ACCEPT_PARTIAL_OBJECT_METADATA_LIST
    )
    assert (status, body["reason"]) == (406, "NotAcceptable")


def test_a_watch_sends_partial_object_metadata_events_and_bookmarks(k8s):
    _seed(k8s)
    query = [
        ("watch", "true"),
        ("sendInitialEvents", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", "30"),
    ]
    response = send(
        k8s.api_client(),
        "GET",
        f"/api/v1/namespaces/{k8s.namespace}/secrets",
        query,
        headers={"Accept": ACCEPT_PARTIAL_OBJECT_METADATA},
        timeout=60,
    )
    events: list[dict] = []

    def read() -> None:
        try:
            for line in response:
                if line.strip():
                    events.append(orjson.loads(line))
        except Exception:  # the test closed the stream under the reader
            pass

    reader = threading.Thread(target=read, name="test-watch-reader", daemon=True)
    reader.start()
    try:
        eventually(
            lambda: any(e["type"] == "BOOKMARK" for e in events),
            WAIT,
            what="the initial events' end",
        )
        ResourceClient(k8s.api_client(), SECRETS).patch(
            "s0", {"metadata": {"labels": {"x": "y"}}}, namespace=k8s.namespace
        )
        eventually(lambda: any(e["type"] == "MODIFIED" for e in events), WAIT, what="the change")
    finally:
        release(response, reusable=False)
        reader.join(10)
    added = [e["object"] for e in events if e["type"] == "ADDED"]
    assert sorted(o["metadata"]["name"] for o in added) == ["s0", "s1", "s2"]
    assert all(
        set(o) == {"kind", "apiVersion", "metadata"} and is_partial_object_metadata(o)
        for o in added
    )
    bookmark = next(e["object"] for e in events if e["type"] == "BOOKMARK")
    assert (bookmark["kind"], bookmark["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    modified = next(e["object"] for e in events if e["type"] == "MODIFIED")
    assert is_partial_object_metadata(modified) and modified["metadata"]["labels"] == {
        "i": "0",
        "x": "y",
    }


def test_a_metadata_only_informer_follows_the_server_on_both_list_paths(k8s):
    _seed(k8s)
    for options in ({}, {"use_watch_list": False}):
        factory = SharedInformerFactory(
            k8s.api_client(), metrics_registry=False, reflector_options=options
        )
        try:
            informer = factory.informer(SECRETS, namespace=k8s.namespace, metadata_only=True)
            factory.start()
            assert informer.wait_for_cache_sync(WAIT)
            assert sorted(o["metadata"]["name"] for o in informer.lister.list()) == [
                "s0",
                "s1",
                "s2",
            ]
            assert all(
                is_partial_object_metadata(o) and "managedFields" not in o["metadata"]
                for o in informer.lister.list()
            )
            ResourceClient(k8s.api_client(), SECRETS).delete("s2", namespace=k8s.namespace)
            eventually(lambda: informer.lister.get("s2", namespace=k8s.namespace) is None, WAIT)
            ResourceClient(k8s.api_client(), SECRETS).create(
                {"metadata": {"name": "s2", "namespace": k8s.namespace}, "stringData": {"p": "q"}}
            )
            eventually(lambda: informer.lister.get("s2", namespace=k8s.namespace) is not None, WAIT)
        finally:
            assert factory.stop(timeout=10)


def _crd(group: str) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {
                            "name": "Color",
                            "type": "string",
                            "jsonPath": ".spec.color",
                            "description": "the widget's color",
                        },
                        {
                            "name": "Shiny",
                            "type": "boolean",
                            "jsonPath": ".spec.shiny",
                            "priority": 1,
                        },
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer"},
                                        "color": {"type": "string"},
                                        "shiny": {"type": "boolean"},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def widgets(k8s):
    group = f"w{secrets.token_hex(4)}.example.com"
    api = k8s.api_client()

    def call(method: str, path: str, body: Any = None) -> int:
        response = send(api, method, path, body=body, timeout=30)
        try:
            response.read()
            return response.status
        finally:
            release(response, reusable=True)

    assert (
        call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _crd(group)) == 201
    )
    path = f"/apis/{group}/v1/namespaces/{k8s.namespace}/widgets"
    body = {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3, "color": "red", "shiny": True},
    }
    eventually(lambda: call("POST", path, body) == 201, WAIT, what="the custom resource served")
    yield group, path
    call("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")


def test_a_table_of_a_custom_resource_has_its_printer_columns(k8s, widgets):
    _group, path = widgets
    status, content_type, table = _get(k8s, path, ACCEPT_TABLE)
    assert status == 200 and content_type == "application/json"
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    columns = table["columnDefinitions"]
    assert [(c["name"], c["type"], c["format"], c["priority"]) for c in columns] == [
        ("Name", "string", "name", 0),
        ("Size", "integer", "", 0),
        ("Color", "string", "", 0),
        ("Shiny", "boolean", "", 1),
    ]
    assert columns[2]["description"] == "the widget's color"
    assert (
        columns[1]["description"]
        == "Custom resource definition column (in JSONPath format): .spec.size"
    )
    [row] = table["rows"]
    assert row["cells"] == ["w1", 3, "red", True]
    assert is_partial_object_metadata(row["object"]) and row["object"]["metadata"]["name"] == "w1"
    assert table["metadata"]["resourceVersion"]


def test_a_table_of_a_custom_resource_without_printer_columns_shows_its_age(k8s, widgets):
    _group, path = widgets
    status, _, table = _get(k8s, path + "/w1", ACCEPT_TABLE, query=(("includeObject", "None"),))
    assert status == 200
    assert [c["name"] for c in table["columnDefinitions"]][:1] == ["Name"]
    assert table["rows"][0]["object"] is None


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_get_shows_a_custom_resources_printer_columns(k8s, widgets, tmp_path):
    group, _path = widgets
    kubeconfig = k8s.write_kubeconfig(tmp_path / "kubeconfig")
    out = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "get", f"widgets.{group}", "-n", k8s.namespace],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "SIZE", "COLOR"]
    assert row.split() == ["w1", "3", "red"]
    wide = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            kubeconfig,
            "get",
            f"widgets.{group}",
            "-n",
            k8s.namespace,
            "-o",
            "wide",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wide.stdout.splitlines()[0].split() == ["NAME", "SIZE", "COLOR", "SHINY"]


def test_a_table_of_configmaps_names_them(k8s):
    ResourceClient(k8s.api_client(), CONFIGMAPS).create(
        {"metadata": {"name": "t1", "namespace": k8s.namespace}}
    )
    status, _, table = _get(k8s, f"/api/v1/namespaces/{k8s.namespace}/configmaps", ACCEPT_TABLE)
    assert status == 200 and table["kind"] == "Table"
    assert table["columnDefinitions"][0]["name"] == "Name"
    assert "t1" in [row["cells"][0] for row in table["rows"]]
