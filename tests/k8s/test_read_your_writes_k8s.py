"""Reading your own writes under a delayed watch, on either server.

The informer reads through a proxy that holds every byte from the server
back for a while (a watch that trails the server, as on a loaded cluster);
the reconcile writes straight to the server and asks to be run again at
once. Without the stale-read guard the next reconcile reads the old object
from the cache and its write is refused with a 409 Conflict, over and over
until the watch catches up; with it the key waits for its own write to show
in the cache, and no write conflicts.
"""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.api import Conflict, ResourceClient
from pyinformers.api.meta import deep_copy, split_key
from pyinformers.cache import SharedInformerFactory
from pyinformers.controller import Controller, Result
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually
from tests.support.tcp_fault_proxy import client_through

pytestmark = pytest.mark.timeout(240)

WAIT = 90.0
STEPS = 8
DELAY = 0.3


class Counter(Controller):
    """Counts ``data.n`` of each ConfigMap up to ``STEPS``, one replace per reconcile, requeued at once."""

    def __init__(self, factory, writer, **options):
        super().__init__("counter", metrics_registry=CollectorRegistry(), **options)
        self.configmaps = factory.lister(CONFIGMAPS)
        self.writer = writer
        self.conflicts = 0
        self.reconciles = 0
        self.watch(factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        ns, name = split_key(key)
        cached = self.configmaps.namespace(ns).get(name)
        if cached is None:
            return None
        self.reconciles += 1
        n = int(cached["data"]["n"])
        if n >= STEPS:
            return None
        new = deep_copy(cached)
        new["data"]["n"] = str(n + 1)
        try:
            self.writer.replace(new)  # carries the cached resourceVersion: stale means 409
        except Conflict:
            self.conflicts += 1
            raise
        return Result(requeue_after=0)


def run_counter(k8s, proxies, **options):
    """Count one ConfigMap up to STEPS through a delayed watch; returns the controller."""
    reader, proxy = client_through(k8s, proxies)
    writer = ResourceClient(k8s.api_client(), CONFIGMAPS)
    writer.create({"metadata": {"name": "counter", "namespace": k8s.namespace}, "data": {"n": "0"}})
    factory = SharedInformerFactory(reader, namespace=k8s.namespace, metrics_registry=False)
    controller = Counter(factory, writer, **options)
    factory.start()
    try:
        controller.start()
        proxy.delay = DELAY
        eventually(
            lambda: (
                writer.get("counter", k8s.namespace)["data"]["n"] == str(STEPS)
                and len(controller.queue) == 0
                and not controller.in_flight()
            ),
            WAIT,
            what=f"the counter at {STEPS}",
        )
    finally:
        controller.stop(5)
        factory.stop(5)
    return controller


def test_a_reconcile_that_writes_and_requeues_at_once_sees_no_conflict_under_a_delayed_watch(
    k8s, proxies
):
    controller = run_counter(k8s, proxies)
    assert controller.conflicts == 0
    assert controller.consistency.stats().deferred > 0  # the guard did hold the key back
    assert controller.consistency.stats().timeouts == 0


def test_without_the_guard_the_same_reconcile_conflicts_with_its_own_writes(k8s, proxies):
    controller = run_counter(k8s, proxies, read_your_writes=False)
    assert controller.conflicts > 0
