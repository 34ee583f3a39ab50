"""The mutation detector wired into informers, listers, handlers and reconciles (over HTTP)."""

from __future__ import annotations

import threading

import pytest

from pyinformers.api import ResourceClient, meta
from pyinformers.cache import (
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    clear_mutations,
    mutations,
)
from pyinformers.controller import Controller
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def seeded(api_client):
    client = ResourceClient(api_client, CONFIGMAPS)
    client.create(
        {
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "data": {"color": "blue"},
        }
    )
    return client


@pytest.fixture
def factory(api_client):
    f = SharedInformerFactory(api_client, metrics_registry=False)
    yield f
    assert f.stop(timeout=5.0)


def test_a_handler_that_changes_a_cached_object_is_reported_with_the_key_and_path(
    factory, seeded, cache_mutations
):
    informer = factory.informer(CONFIGMAPS, namespace="default", mutation_detector=True)
    done = threading.Event()

    def on_add(obj, initial):
        obj["data"]["color"] = "red"  # the bug
        done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(on_add=on_add))
    factory.start()
    assert informer.wait_for_cache_sync(10) and done.wait(10)
    eventually(lambda: cache_mutations(), timeout=10)
    [found] = cache_mutations()
    assert (found.informer, found.key, found.path) == (informer.name, "default/web", "data.color")
    assert "on_add" in found.culprit and "handler" in found.culprit


def test_a_reconcile_that_changes_what_it_read_is_named(factory, seeded, cache_mutations):
    informer = factory.informer(CONFIGMAPS, namespace="default", mutation_detector=True)
    reconciled = threading.Event()

    class Mutating(Controller):
        def __init__(self) -> None:
            super().__init__("mutating", metrics_registry=False)
            self.configmaps = factory.lister(CONFIGMAPS, namespace="default")
            self.watch(informer)

        def reconcile(self, key):
            namespace, name = meta.split_key(key)
            cm = self.configmaps.namespace(namespace).get(name)
            cm["metadata"]["labels"]["touched"] = "yes"  # the bug
            reconciled.set()

    controller = Mutating()
    factory.start()
    controller.start()
    try:
        assert reconciled.wait(10)
        eventually(lambda: cache_mutations(), timeout=10)
    finally:
        controller.stop(5)
    [found] = cache_mutations()
    assert found.key == "default/web" and found.path == "metadata.labels.touched"
    assert found.culprit == "reconcile of mutating (default/web)"


def test_an_unchanged_cache_reports_nothing_and_a_deep_copy_is_free_to_change(
    factory, seeded, cache_mutations
):
    informer = factory.informer(CONFIGMAPS, namespace="default", mutation_detector=True)
    informer.add_event_handler(
        ResourceEventHandlerFuncs(on_add=lambda obj, initial: meta.deep_copy(obj)["data"].clear())
    )
    factory.start()
    assert informer.wait_for_cache_sync(10)
    copy = meta.deep_copy(informer.lister.get("web", namespace="default"))
    copy["data"]["color"] = "green"
    seeded.replace(copy)
    eventually(
        lambda: informer.lister.get("web", namespace="default")["data"] == {"color": "green"},
        timeout=10,
    )
    informer.stop()
    assert cache_mutations() == []


def test_a_change_no_scope_saw_is_found_when_the_object_is_replaced(
    factory, seeded, cache_mutations
):
    informer = factory.informer(CONFIGMAPS, namespace="default", mutation_detector=True)
    factory.start()
    assert informer.wait_for_cache_sync(10)
    informer.indexer.get_by_key("default/web")["data"]["sneaky"] = "1"  # no lister, no handler
    seeded.patch("web", {"data": {"color": "green"}}, namespace="default")
    eventually(lambda: cache_mutations(), timeout=10)
    [found] = cache_mutations()
    assert found.path == "data.sneaky" and "replaced" in found.culprit


def test_without_the_detector_nothing_is_fingerprinted(factory, seeded):
    informer = factory.informer(CONFIGMAPS, namespace="default", mutation_detector=False)
    factory.start()
    assert informer.wait_for_cache_sync(10)
    assert informer.mutation_detector is None
    clear_mutations()
    informer.lister.get("web", namespace="default")["data"]["x"] = "1"
    informer.stop()
    assert mutations() == []


def test_the_pytest_plugin_turns_the_detector_on_by_default(factory):
    assert factory.informer(CONFIGMAPS).mutation_detector is not None
