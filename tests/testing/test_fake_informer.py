"""pyinformers.testing.FakeInformer: a cache the test writes, whose changes reach handlers synchronously."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.api import meta
from pyinformers.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from pyinformers.clock import FakeClock
from pyinformers.controller import Controller, EnqueueForOwner
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS
from pyinformers.testing import FakeInformer


def cm(name, ns="default", rv="1", **data):
    return {
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "uid": f"uid-{name}"},
        "data": data,
    }


def test_changes_reach_every_handler_at_once_and_the_cache_follows():
    informer = FakeInformer(CONFIGMAPS)
    seen = []
    informer.add_event_handler(
        ResourceEventHandlerFuncs(
            on_add=lambda obj, initial: seen.append(("add", meta.name(obj), initial)),
            on_update=lambda old, new: seen.append(("update", new["metadata"]["resourceVersion"])),
            on_delete=lambda obj: seen.append(("delete", type(obj).__name__)),
        )
    )
    lister = informer.lister()
    informer.add(cm("a"))
    assert seen == [("add", "a", False)] and lister.namespace("default").get("a") == cm("a")
    informer.update(cm("a"), cm("a", rv="2"))
    assert (
        seen[-1] == ("update", "2")
        and lister.get("a", namespace="default")["metadata"]["resourceVersion"] == "2"
    )
    informer.delete(DeletedFinalStateUnknown("default/a", cm("a", rv="2")))
    assert seen[-1] == ("delete", "DeletedFinalStateUnknown") and lister.list() == []


def test_a_handler_added_late_first_gets_the_cache_as_initial_adds_and_removal_stops_delivery():
    informer = FakeInformer(CONFIGMAPS)
    informer.add(cm("a"))
    seen = []
    registration = informer.add_event_handler(
        ResourceEventHandlerFuncs(on_add=lambda obj, initial: seen.append(initial)),
        resync_period=30,
    )
    assert seen == [True] and informer.resync_periods == [30]
    assert registration.remove() and informer.handlers == [] and informer.resync_periods == []
    informer.add(cm("b"))
    assert seen == [True]


def test_its_lister_refuses_a_namespaced_get_without_a_namespace_like_a_real_one():
    with pytest.raises(ValueError):
        FakeInformer(CONFIGMAPS).lister().get("a")


class ConfigForDeployment(Controller):
    """A reconcile that reads two listers: the kind of controller FakeInformer unit-tests."""

    def __init__(self, deployments, configmaps, **options):
        super().__init__("config-for-deployment", **options)
        self.deployments, self.configmaps = deployments.lister(), configmaps.lister()
        self.missing = []
        self.watch(deployments)
        self.watch(configmaps, EnqueueForOwner("Deployment", owner_group="apps"))

    def reconcile(self, key):
        namespace, name = meta.split_key(key)
        if self.deployments.namespace(namespace).get(name) and not self.configmaps.namespace(
            namespace
        ).get(name):
            self.missing.append(key)


def test_a_controller_can_be_unit_tested_on_fake_informers_without_a_server():
    deployments, configmaps = FakeInformer(DEPLOYMENTS), FakeInformer(CONFIGMAPS)
    controller = ConfigForDeployment(
        deployments, configmaps, clock=FakeClock(), metrics_registry=CollectorRegistry()
    )
    web = {"metadata": {"name": "web", "namespace": "default", "uid": "u1"}}
    deployments.add(web)
    key, _ = controller.queue.get(timeout=0)  # the add enqueued the Deployment at once
    assert key == "default/web"
    controller.reconcile(key)
    assert controller.missing == ["default/web"]
    controller.queue.done(key)
    child = cm("web")
    meta.set_controller_reference(dict(web, apiVersion="apps/v1", kind="Deployment"), child)
    configmaps.delete(child)  # a child's event wakes its owner
    assert controller.queue.get(timeout=0)[0] == "default/web"
    controller.stop(1)
