"""The factory's per-informer selection: namespaces, selectors, metadata only, the same resource twice."""

from __future__ import annotations

import logging

import pytest

from pyinformers.api import ResourceClient
from pyinformers.api._metadata import is_partial_object_metadata
from pyinformers.resources import CONFIGMAPS, NAMESPACES, PODS, SECRETS
from pyinformers.testing import eventually
from tests.cache.test_factory import factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def objects(api_client):
    namespaces = ResourceClient(api_client, NAMESPACES)
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    secrets = ResourceClient(api_client, SECRETS)
    for ns in ("a", "b", "c"):
        namespaces.create({"metadata": {"name": ns}})
        for team in ("red", "blue"):
            configmaps.create(
                {
                    "metadata": {"name": f"cm-{team}", "namespace": ns, "labels": {"team": team}},
                    "data": {"team": team},
                }
            )
        secrets.create(
            {
                "metadata": {"name": "s", "namespace": ns, "labels": {"team": "red"}},
                "stringData": {"password": "hunter2"},
            }
        )
    return configmaps


def names(lister, **kwargs):
    return sorted(
        f"{o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in lister.list(**kwargs)
        if o["metadata"]["namespace"] in ("a", "b", "c")
    )


def synced(f):
    f.start()
    assert f.wait_for_cache_sync(timeout=30)


def test_a_selection_given_per_informer_overrides_the_factory_default(factory, objects):
    f = factory(label_selector="team=red")
    default = f.informer(CONFIGMAPS, namespace="a")
    blue = f.informer(CONFIGMAPS, namespace="a", label_selector="team=blue")
    everything = f.informer(CONFIGMAPS, namespace="a", label_selector=None)
    assert len({id(default), id(blue), id(everything)}) == 3
    assert f.informer(CONFIGMAPS, namespace="a", label_selector="team=blue") is blue
    synced(f)
    assert names(default.lister) == ["a/cm-red"]
    assert names(blue.lister) == ["a/cm-blue"]
    assert names(everything.lister) == ["a/cm-blue", "a/cm-red"]
    assert default.name != blue.name != everything.name


def test_a_field_selector_per_informer_restricts_it(factory, objects):
    f = factory()
    one = f.informer(CONFIGMAPS, field_selector="metadata.name=cm-blue")
    synced(f)
    assert names(one.lister) == ["a/cm-blue", "b/cm-blue", "c/cm-blue"]


def test_several_namespaces_are_merged_into_one_informer_and_the_rest_is_not_cached(
    factory, objects
):
    f = factory()
    informer = f.informer(CONFIGMAPS, namespaces=["a", "b"])
    assert f.informer(CONFIGMAPS, namespaces=("b", "a")) is informer  # the same set of namespaces
    assert f.lister(CONFIGMAPS, namespaces=["a", "b"]) is informer.lister
    synced(f)
    assert names(informer.lister) == ["a/cm-blue", "a/cm-red", "b/cm-blue", "b/cm-red"]
    assert informer.lister.get("cm-red", namespace="b")["data"] == {"team": "red"}
    with pytest.raises(ValueError, match="not cached"):
        informer.lister.get("cm-red", namespace="c")
    objects.patch("cm-red", {"data": {"team": "changed"}}, namespace="b")
    eventually(
        lambda: informer.lister.get("cm-red", namespace="b")["data"] == {"team": "changed"},
        timeout=10,
    )


def test_each_cached_namespace_gets_its_own_role(factory, objects):
    f = factory()
    f.informer(CONFIGMAPS, namespaces=["a", "b"])
    f.informer(PODS, namespace="c")
    grants = {(g.namespace, g.resource, g.verb) for g in f.permissions().grants()}
    assert {(ns, "configmaps", v) for ns in ("a", "b") for v in ("get", "list", "watch")} <= grants
    assert {("c", "pods", v) for v in ("get", "list", "watch")} <= grants
    assert not [g for g in grants if g[0] is None]


def test_a_selector_the_server_cannot_serve_is_refused_when_the_informer_is_built(factory):
    f = factory()
    with pytest.raises(ValueError, match="'data.team' is not a selectable field"):
        f.informer(CONFIGMAPS, field_selector="data.team=red")
    with pytest.raises(ValueError, match="label_selector"):
        f.informer(CONFIGMAPS, label_selector="team in (red")
    with pytest.raises(ValueError, match="cluster-scoped"):
        f.informer(NAMESPACES, namespaces=["a", "b"])
    with pytest.raises(ValueError, match="namespace"):
        f.informer(CONFIGMAPS, namespace="a", namespaces=["a", "b"])
    with pytest.raises(ValueError, match="namespaces"):
        f.informer(CONFIGMAPS, namespaces=[])
    assert f.informers() == {}


def test_metadata_only_caches_partial_object_metadata_and_never_a_secrets_data(factory, objects):
    f = factory()
    informer = f.informer(SECRETS, namespace="a", metadata_only=True)
    full = f.informer(SECRETS, namespace="a")
    assert informer is not full and "metadata" in informer.name
    synced(f)
    cached = informer.lister.get("s", namespace="a")
    assert is_partial_object_metadata(cached)
    assert set(cached) == {"kind", "apiVersion", "metadata"}
    assert cached["metadata"]["labels"] == {"team": "red"}
    assert "managedFields" not in cached["metadata"]
    assert "data" in full.lister.get("s", namespace="a")
    assert [o["metadata"]["name"] for o in informer.lister.list(selector="team=red")] == ["s"]
    ResourceClient(f.api_client, SECRETS).patch(
        "s", {"metadata": {"labels": {"team": "blue"}}}, namespace="a"
    )
    eventually(
        lambda: informer.lister.get("s", namespace="a")["metadata"]["labels"] == {"team": "blue"},
        timeout=10,
    )
    assert is_partial_object_metadata(informer.lister.get("s", namespace="a"))


def test_metadata_only_with_the_list_path_too(factory, objects):
    f = factory(reflector_options={"use_watch_list": False})
    informer = f.informer(
        CONFIGMAPS, namespaces=["a", "b"], metadata_only=True, label_selector="team=blue"
    )
    synced(f)
    assert names(informer.lister) == ["a/cm-blue", "b/cm-blue"]
    assert all(is_partial_object_metadata(o) for o in informer.lister.list())


def test_a_whole_cluster_informer_of_secrets_or_configmaps_without_a_selector_is_warned_about(
    factory, caplog
):
    f = factory()
    with caplog.at_level(logging.WARNING, logger="pyinformers.cache"):
        f.informer(SECRETS)
        f.informer(CONFIGMAPS, metadata_only=True)
        f.informer(CONFIGMAPS, label_selector="team=red")
        f.informer(SECRETS, namespace="a")
        f.informer(PODS)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (
        len(warnings) == 1
        and "every Secret of the cluster" in warnings[0]
        and "metadata_only" in warnings[0]
    )


def test_metadata_only_objects_share_the_strings_that_repeat_between_them(factory, objects):
    f = factory()
    informer = f.informer(CONFIGMAPS, namespaces=["a", "b"], metadata_only=True)
    synced(f)
    a, b = (
        informer.lister.get("cm-red", namespace="a"),
        informer.lister.get("cm-red", namespace="b"),
    )
    assert a["metadata"]["labels"] == b["metadata"]["labels"] == {"team": "red"}
    assert a["metadata"]["labels"]["team"] is b["metadata"]["labels"]["team"]
    assert a["kind"] is b["kind"] and a["apiVersion"] is b["apiVersion"]


def test_sharing_metadata_strings_changes_nothing_a_reader_sees():
    from pyinformers.cache import share_metadata_strings

    obj = {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "name": "x",
            "namespace": "ns",
            "labels": {"a": "b", "long": "v" * 100},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}],
        },
    }
    before = repr(obj)
    assert share_metadata_strings(obj) is obj and repr(obj) == before
    assert share_metadata_strings("not an object") == "not an object"
    assert share_metadata_strings({"metadata": None}) == {"metadata": None}
