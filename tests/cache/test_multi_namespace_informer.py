"""Several namespaces as one informer, over HTTP: one watch each, one lister, nothing else cached."""

from __future__ import annotations

import pytest

from pyinformers.api import ListWatch, ResourceClient
from pyinformers.cache import ResourceEventHandlerFuncs, SharedIndexInformer, default_indexers
from pyinformers.cache._multi import MultiNamespaceInformer
from pyinformers.resources import CONFIGMAPS, NAMESPACES
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def cluster(api_client):
    namespaces = ResourceClient(api_client, NAMESPACES)
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    for ns in ("a", "b", "c"):
        namespaces.create({"metadata": {"name": ns}})
        configmaps.create(
            {"metadata": {"name": "cm", "namespace": ns, "labels": {"ns": ns}}, "data": {"ns": ns}}
        )
    return configmaps


@pytest.fixture
def multi(api_client, cluster):
    informers = {
        ns: SharedIndexInformer(
            ListWatch(ResourceClient(api_client, CONFIGMAPS), namespace=ns),
            name=f"v1/configmaps@{ns}",
            indexers=default_indexers(),
            metrics_registry=False,
        )
        for ns in ("a", "b")
    }
    informer = MultiNamespaceInformer(informers, name="v1/configmaps@{a,b}", resource=CONFIGMAPS)
    yield informer
    assert informer.stop(timeout=5.0)


def test_the_lister_reads_each_cached_namespace_and_lists_them_together(multi):
    multi.start()
    assert multi.wait_for_cache_sync(10)
    assert multi.lister.get("cm", namespace="a")["data"] == {"ns": "a"}
    assert multi.lister.namespace("b").get("cm")["data"] == {"ns": "b"}
    assert sorted(
        o["metadata"]["namespace"] for o in multi.lister.list() if o["metadata"]["name"] == "cm"
    ) == ["a", "b"]
    assert [o["metadata"]["namespace"] for o in multi.lister.list(selector="ns=b")] == ["b"]
    assert [
        o["metadata"]["namespace"]
        for o in multi.indexer.by_index("namespace", "a")
        if o["metadata"]["name"] == "cm"
    ] == ["a"]
    assert multi.indexer.get_by_key("c/cm") is None
    assert all(o["metadata"]["namespace"] in ("a", "b") for o in multi.indexer.list())


def test_reading_a_namespace_that_is_not_cached_is_an_error_not_an_absence(multi):
    multi.start()
    assert multi.wait_for_cache_sync(10)
    with pytest.raises(ValueError, match="namespace 'c' is not cached"):
        multi.lister.get("cm", namespace="c")
    with pytest.raises(ValueError, match="not cached"):
        multi.lister.namespace("c")
    with pytest.raises(ValueError, match="namespaced"):
        multi.lister.get("cm")


def test_a_handler_hears_of_every_cached_namespace_and_of_no_other(multi, cluster):
    seen = []
    registration = multi.add_event_handler(
        ResourceEventHandlerFuncs(
            on_add=lambda obj, initial: seen.append(
                ("add", obj["metadata"]["namespace"], obj["metadata"]["name"])
            ),
            on_update=lambda old, new: seen.append(
                ("update", new["metadata"]["namespace"], new["metadata"]["name"])
            ),
        )
    )
    multi.start()
    assert multi.wait_for_cache_sync(10) and registration.has_synced()
    for ns in ("a", "b", "c"):
        cluster.patch("cm", {"data": {"changed": "yes"}}, namespace=ns)
    eventually(lambda: {("update", "a", "cm"), ("update", "b", "cm")} <= set(seen), timeout=10)
    assert not [event for event in seen if event[1] == "c"]
    assert ("add", "a", "cm") in seen and ("add", "b", "cm") in seen
    assert registration.remove(timeout=5)


def test_it_is_synced_and_healthy_only_when_every_namespace_is(multi):
    assert not multi.has_synced()
    assert multi.health_problem().startswith("namespace a: ")
    multi.start()
    assert multi.wait_for_cache_sync(10)
    assert multi.has_synced() and multi.healthy() and multi.sync_problem() == ""
    assert "a=" in multi.last_sync_resource_version() and "b=" in multi.last_sync_resource_version()
    assert "namespaces=['a', 'b']" in repr(multi)


def test_one_namespace_is_not_a_multi_namespace_informer(api_client):
    informer = SharedIndexInformer(
        ListWatch(ResourceClient(api_client, CONFIGMAPS), namespace="a"),
        name="x",
        metrics_registry=False,
    )
    with pytest.raises(ValueError, match="at least two"):
        MultiNamespaceInformer({"a": informer}, name="x")
    informer.stop()
