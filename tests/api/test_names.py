"""Names cannot escape their path (issue 12, item 3).

``ResourceClient(...).delete("..", namespace="victim")`` once sent ``DELETE
/api/v1/namespaces/victim/`` (the HTTP library removes dot segments) and
deleted the namespace. Every name and namespace that could mean something
else than itself is refused before any request, with a ValueError naming
the argument.
"""

from __future__ import annotations

import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.resources import CONFIGMAPS, NAMESPACES

BAD = [".", "..", "a/b", "../x", "a%2Fb", "%2e%2e", "/"]


class NoRequests:
    """An api_client that fails the test if the client ever tries to send a request."""

    def __getattr__(self, attr):
        raise AssertionError(f"a request was attempted (api_client.{attr})")


@pytest.fixture
def client():
    return ResourceClient(NoRequests(), CONFIGMAPS)


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_name_is_refused_before_any_request(client, bad):
    cm = {"metadata": {"name": bad, "namespace": "default"}}
    calls = [
        lambda: client.get(bad, "default"),
        lambda: client.delete(bad, "default"),
        lambda: client.patch(bad, {"data": {}}, "default"),
        lambda: client.patch(bad, {"data": {}}, "default", subresource="status"),
        lambda: client.replace(cm),
        lambda: client.replace_status(cm),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="name"):
            call()


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_namespace_is_refused_before_any_request(client, bad):
    cm = {"metadata": {"name": "ok", "namespace": bad}}
    calls = [
        lambda: client.get("ok", bad),
        lambda: client.delete("ok", bad),
        lambda: client.patch("ok", {"data": {}}, bad),
        lambda: client.create(cm),
        lambda: client.create({"metadata": {"name": "ok"}}, bad),
        lambda: client.replace(cm),
        lambda: client.list(bad),
        lambda: client.watch(bad),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="namespace"):
            call()


@pytest.mark.parametrize("missing", [None, ""])
def test_a_missing_name_is_refused_where_one_is_required(client, missing):
    for call in (
        lambda: client.get(missing, "default"),
        lambda: client.delete(missing, "default"),
        lambda: client.patch(missing, {"data": {}}, "default"),
        lambda: client.replace({"metadata": {"name": missing, "namespace": "default"}}),
    ):
        with pytest.raises(ValueError, match="name"):
            call()


def test_a_namespace_is_required_for_one_namespaced_object(client):
    with pytest.raises(ValueError, match="namespace"):
        client.get("ok", "")
    with pytest.raises(ValueError, match="namespace"):
        client.delete("ok")


def test_dot_dot_does_not_reach_the_namespace_on_a_real_server(api_server, api_client):
    namespaces = ResourceClient(api_client, NAMESPACES)
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    namespaces.create({"metadata": {"name": "victim"}})
    try:
        with pytest.raises(ValueError, match="name"):
            configmaps.delete("..", namespace="victim")
        with pytest.raises(ValueError, match="name"):
            configmaps.get("..", namespace="victim")
        with pytest.raises(ValueError, match="namespace"):
            configmaps.list(namespace="..")
        assert namespaces.get("victim")["metadata"]["name"] == "victim"
    finally:
        namespaces.delete("victim")
