"""The watch and list protocol as informers meet it, held identical on both servers.

Run with ``--k8s-server=both``: every test here talks raw HTTP (through the
official client's ``ApiClient``) to the embedded server and to a real
kube-apiserver 1.36 and asserts the same answer from each. Each test pins a
rule where the embedded server once differed from the real one.

Watches use ``timeoutSeconds=1`` so the server ends them: a test reads a
whole stream and can assert what did *not* come.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pyinformers.api import ResourceClient
from pyinformers.api.transport import release, send
from pyinformers.resources import CONFIGMAPS

pytestmark = pytest.mark.timeout(60)

END = "k8s.io/initial-events-end"
ROOT_CA = "kube-root-ca.crt"  # a real namespace has it; the embedded one only with namespace_defaults


def _get(k8s: Any, **query: str) -> tuple[int, Any]:
    """GET the test namespace's configmaps with ``query``: (status, body or list of watch events)."""
    response = send(k8s.api_client(), "GET", f"/api/v1/namespaces/{k8s.namespace}/configmaps", list(query.items()), timeout=30)
    try:
        raw = response.read()
    finally:
        release(response, reusable=True)
    if response.status == 200 and query.get("watch"):
        return 200, [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    return response.status, orjson.loads(raw)


def _seen(events: list[dict]) -> list[tuple[str, str]]:
    """(type, name or the bookmark's annotation) per event, without the namespace's root-CA ConfigMap."""
    seen = []
    for event in events:
        metadata = event["object"].get("metadata") or {}
        if event["type"] == "BOOKMARK":
            seen.append(("BOOKMARK", "end" if (metadata.get("annotations") or {}).get(END) == "true" else ""))
        elif metadata.get("name") != ROOT_CA:
            seen.append((event["type"], metadata["name"]))
    return seen


def _seeded(k8s: Any) -> str:
    """Two ConfigMaps (created out of name order); returns the resourceVersion of a list after them."""
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    for name in ("cm-b", "cm-a"):
        client.create({"metadata": {"name": name, "namespace": k8s.namespace}})
    return client.list(k8s.namespace).resource_version


@pytest.mark.parametrize("resource_version", [None, "", "0"], ids=["unset", "empty", "zero"])
def test_a_watch_without_resource_version_ends_its_initial_events_with_the_bookmark_when_bookmarks_are_allowed(
    k8s, resource_version
):
    list_rv = _seeded(k8s)
    query = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "1"}
    if resource_version is not None:
        query["resourceVersion"] = resource_version
    status, events = _get(k8s, **query)  # no sendInitialEvents: kube-apiserver 1.36 defaults it to true here
    assert status == 200
    assert _seen(events) == [("ADDED", "cm-a"), ("ADDED", "cm-b"), ("BOOKMARK", "end")]
    bookmark = events[-1]["object"]
    assert set(bookmark) == {"kind", "apiVersion", "metadata"} and bookmark["kind"] == "ConfigMap"
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(list_rv)  # the state the ADDED events show


def test_a_watch_without_resource_version_has_no_end_marker_when_bookmarks_are_not_allowed(k8s):
    _seeded(k8s)
    status, events = _get(k8s, watch="true", timeoutSeconds="1")
    assert status == 200
    assert _seen(events) == [("ADDED", "cm-a"), ("ADDED", "cm-b")]


def test_a_watch_from_a_resource_version_gets_neither_initial_events_nor_the_end_marker(k8s):
    list_rv = _seeded(k8s)
    status, events = _get(k8s, watch="true", allowWatchBookmarks="true", resourceVersion=list_rv, timeoutSeconds="1")
    assert (status, _seen(events)) == (200, [])


@pytest.mark.parametrize("resource_version", [None, "0"], ids=["unset", "zero"])
def test_send_initial_events_false_starts_a_watch_without_resource_version_from_now(k8s, resource_version):
    _seeded(k8s)
    query = {"watch": "true", "sendInitialEvents": "false", "resourceVersionMatch": "NotOlderThan",
             "allowWatchBookmarks": "true", "timeoutSeconds": "1"}
    if resource_version is not None:
        query["resourceVersion"] = resource_version
    status, events = _get(k8s, **query)
    assert (status, _seen(events)) == (200, [])  # no ADDED for what exists, no end marker
