"""A cache of only the held shards, over HTTP: gained shards are listed, lost ones dropped."""

from __future__ import annotations

import threading

import pytest

from pyinformers.api import ListWatch, ResourceClient
from pyinformers.cache import ResourceEventHandlerFuncs, SharedIndexInformer
from pyinformers.cache._sharded import SHARD_LABEL, ShardedInformer, shard_selector
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def sharded(api_client):
    client = ResourceClient(api_client, CONFIGMAPS)
    for i in range(8):
        client.create(
            {
                "metadata": {
                    "name": f"cm-{i}",
                    "namespace": "default",
                    "labels": {SHARD_LABEL: str(i % 4)},
                }
            }
        )

    def make(shard: int) -> SharedIndexInformer:
        lw = ListWatch(
            ResourceClient(api_client, CONFIGMAPS),
            namespace="default",
            label_selector=shard_selector(shard),
        )
        return SharedIndexInformer(lw, name=f"v1/configmaps#shard-{shard}", metrics_registry=False)

    informer = ShardedInformer(make, name="v1/configmaps#sharded", resource=CONFIGMAPS)
    yield informer, client
    assert informer.stop(timeout=5.0)


def cached(informer):
    return sorted(o["metadata"]["name"] for o in informer.lister.list())


def test_only_the_objects_of_the_held_shards_are_cached(sharded):
    informer, _client = sharded
    lister = informer.lister
    informer.start()
    assert not informer.has_synced()  # the held shards are not known yet
    assert informer.set_shards({1, 3}) == ({1, 3}, set())
    assert informer.wait_for_cache_sync(10)
    assert cached(informer) == ["cm-1", "cm-3", "cm-5", "cm-7"]
    assert lister.get("cm-5", namespace="default") is not None
    assert lister.get("cm-0", namespace="default") is None
    gained, lost = informer.set_shards({0, 1})
    assert (gained, lost) == ({0}, {3})
    assert informer.wait_for_cache_sync(10)
    assert cached(informer) == ["cm-0", "cm-1", "cm-4", "cm-5"]
    assert informer.lister is lister  # a lister taken once keeps reading the held shards
    assert informer.moves == 4


def test_a_handler_hears_of_a_gained_shards_objects_as_adds_and_of_nothing_else(sharded):
    informer, client = sharded
    seen, lock = [], threading.Lock()

    def on_add(obj, initial):
        with lock:
            seen.append(obj["metadata"]["name"])

    registration = informer.add_event_handler(ResourceEventHandlerFuncs(on_add=on_add))
    informer.set_shards({2})
    informer.start()
    assert informer.wait_for_cache_sync(10)
    eventually(lambda: sorted(seen) == ["cm-2", "cm-6"], timeout=10)
    informer.set_shards({2, 0})
    eventually(lambda: sorted(seen) == ["cm-0", "cm-2", "cm-4", "cm-6"], timeout=10)
    eventually(registration.has_synced, timeout=10)
    client.create(
        {"metadata": {"name": "late", "namespace": "default", "labels": {SHARD_LABEL: "1"}}}
    )
    client.create(
        {"metadata": {"name": "late-0", "namespace": "default", "labels": {SHARD_LABEL: "0"}}}
    )
    eventually(lambda: "late-0" in seen, timeout=10)
    assert "late" not in seen
    assert registration.remove(timeout=5)


def test_it_is_unhealthy_before_start_and_names_the_failing_shard(sharded):
    informer, _client = sharded
    assert informer.health_problem() == "not running"
    assert "not known yet" in informer.sync_problem()
    informer.set_shards({0})
    informer.start()
    assert informer.wait_for_cache_sync(10)
    assert informer.healthy() and informer.sync_problem() == ""
    assert "shards=[0]" in repr(informer)
