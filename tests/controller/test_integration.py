"""Controllers against the in-process API server, over HTTP, with real informers.

The controller under test owns ConfigMaps: for every Deployment ``d`` it keeps
a ConfigMap ``d-config`` (controlled by ``d``) whose data says the
Deployment's replicas. It watches Deployments (filtered by
``generation_changed``) and ConfigMaps (mapped to their owner).
"""

from __future__ import annotations

import logging  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from pyinformers.api import meta  # noqa: E402
from pyinformers.api._errors import NotFound  # noqa: E402
from pyinformers.cache._factory import SharedInformerFactory  # noqa: E402
from pyinformers.clock import FakeClock  # noqa: E402
from pyinformers.controller import (  # noqa: E402
    Controller,
    EnqueueForOwner,
    Result,
    generation_changed,
)
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS  # noqa: E402
from pyinformers.testing import eventually
from pyinformers.workqueue import ItemExponentialFailureRateLimiter  # noqa: E402
from tests.support.objects import deployment  # noqa: E402

WAIT = 30.0  # generous: other test suites share the two cores
NS = "default"


class ConfigOwner(Controller):
    """Keeps ``<deployment>-config`` in line with each Deployment."""

    def __init__(self, factory, **options):
        super().__init__("config-owner", **options)
        self.deployments = factory.lister(DEPLOYMENTS)
        self.configmaps = factory.lister(CONFIGMAPS)
        self.cm_client = factory.client(CONFIGMAPS)
        self.reconciles = []
        self.cond = threading.Condition()
        self.child_events = []
        self.owner_decisions = {}  # resourceVersion -> what generation_changed said
        self.deployment_watch = self.watch(
            factory.informer(DEPLOYMENTS), predicates=[self._generation_changed]
        )
        self.configmap_watch = self.watch(
            factory.informer(CONFIGMAPS),
            EnqueueForOwner("Deployment", owner_group="apps"),
            predicates=[self._record_child_event],
        )

    def _generation_changed(self, event):
        """generation_changed, recording each decision (after it is made) for the tests."""
        passed = generation_changed(event)
        self.owner_decisions[event.obj["metadata"]["resourceVersion"]] = passed
        return passed

    def _record_child_event(self, event):
        self.child_events.append(event)
        return True

    def reconcile(self, key):
        with self.cond:
            self.reconciles.append(key)
            self.cond.notify_all()
        namespace, name = meta.split_key(key)
        owner = self.deployments.namespace(namespace).get(name)
        if owner is None:
            return None  # the server's garbage collector removes the children
        desired = {"replicas": str(owner["spec"].get("replicas", 1))}
        cm = self.configmaps.namespace(namespace).get(f"{name}-config")
        if cm is None:
            child = {
                "metadata": {"name": f"{name}-config", "namespace": namespace},
                "data": desired,
            }
            meta.set_controller_reference(owner, child)
            self.cm_client.create(child)
        elif meta.is_controlled_by(cm, owner) and cm.get("data") != desired:
            fixed = meta.deep_copy(cm)
            fixed["data"] = desired
            self.cm_client.replace(fixed)
        return None

    def count(self, key):
        with self.cond:
            return self.reconciles.count(key)


@pytest.fixture
def running(api_server):
    """A started factory and ConfigOwner controller; both stopped afterwards."""
    started = []

    def start(**options):
        factory = SharedInformerFactory(
            api_server.api_client(), metrics_registry=CollectorRegistry()
        )
        controller = ConfigOwner(factory, metrics_registry=CollectorRegistry(), **options)
        factory.start()
        controller.start()
        started.append((factory, controller))
        return factory, controller

    yield start
    for factory, controller in started:
        controller.stop(5)
        factory.stop(5)
        factory.api_client.close()


def child_of(api_server, name):
    for cm in api_server.objects("configmaps", namespace=NS):
        if cm["metadata"]["name"] == f"{name}-config":
            return cm
    return None


def test_the_owner_gets_its_child_which_is_repaired_recreated_and_collected(api_server, running):
    factory, controller = running(workers=2)
    deployments = factory.client(DEPLOYMENTS)
    deployments.create(deployment("web", replicas=3))

    cm = eventually(lambda: child_of(api_server, "web"), what="the child ConfigMap")
    assert cm["data"] == {"replicas": "3"}
    assert meta.controller_of(cm)["name"] == "web"

    # someone edits the child: reverted
    edited = meta.deep_copy(cm)
    edited["data"] = {"replicas": "99"}
    factory.client(CONFIGMAPS).replace(edited)
    eventually(
        lambda: (
            (c := child_of(api_server, "web"))
            and c["metadata"]["resourceVersion"] != edited["metadata"]["resourceVersion"]
            and c["data"] == {"replicas": "3"}
        ),
        what="the edit reverted",
    )

    # someone deletes the child: recreated (a new object, new uid)
    old_uid = child_of(api_server, "web")["metadata"]["uid"]
    factory.client(CONFIGMAPS).delete("web-config", NS)
    recreated = eventually(
        lambda: (c := child_of(api_server, "web")) and c["metadata"]["uid"] != old_uid and c,
        what="the child recreated",
    )
    assert recreated["data"] == {"replicas": "3"}

    # a spec change reaches the child
    live = deployments.get("web", NS)
    live["spec"]["replicas"] = 5
    deployments.replace(live)
    eventually(
        lambda: (c := child_of(api_server, "web")) and c["data"] == {"replicas": "5"},
        what="spec followed",
    )

    # deleting the owner leaves nothing behind (server GC)
    deployments.delete("web", NS)
    eventually(lambda: child_of(api_server, "web") is None, what="the child collected")
    eventually(
        lambda: controller.configmaps.get("web-config", namespace=NS) is None,
        what="the cache to forget the child",
    )


def test_status_only_updates_of_the_owner_are_dropped_by_generation_changed(api_server, running):
    factory, controller = running()
    deployments = factory.client(DEPLOYMENTS)
    deployments.create(deployment("quiet"))
    eventually(lambda: child_of(api_server, "quiet"), what="the child")

    live = deployments.get("quiet", NS)
    live["status"] = {"replicas": 1, "readyReplicas": 1}
    status_rv = deployments.replace_status(live)["metadata"]["resourceVersion"]
    eventually(
        lambda: status_rv in controller.owner_decisions,
        what="the status update delivered to the handler",
    )
    assert controller.owner_decisions[status_rv] is False

    # a spec change does get through, and is reconciled
    before = controller.count(f"{NS}/quiet")
    live = deployments.get("quiet", NS)
    live["spec"]["replicas"] = 2
    spec_rv = deployments.replace(live)["metadata"]["resourceVersion"]
    eventually(lambda: spec_rv in controller.owner_decisions, what="the spec change delivered")
    assert controller.owner_decisions[spec_rv] is True
    eventually(lambda: controller.count(f"{NS}/quiet") > before, what="the spec change reconciled")


def test_a_deletion_missed_by_the_watch_reaches_the_owner_as_a_tombstone(api_server, running):
    factory, controller = running()
    deployments = factory.client(DEPLOYMENTS)
    deployments.create(deployment("tomb"))
    first = eventually(
        lambda: controller.configmaps.get("tomb-config", namespace=NS),
        what="the child in the cache",
    )

    # The watch goes silent, the child is deleted and history compacted, then the watch
    # breaks: the reflector's re-watch gets 410, it relists, and the DeltaFIFO reports the
    # vanished child as DeletedFinalStateUnknown. An idle server watch notices the stall at
    # its next wake-up, so the deletion waits until every open watch is parked (a nudge
    # wakes the ConfigMap watch at once; it may be sent before the stall or not at all).
    api_server.faults.stall_watches = True
    factory.client(CONFIGMAPS).create({"metadata": {"name": "nudge", "namespace": NS}})
    eventually(
        lambda: (c := api_server.counters).get("watches_stalled", 0) == c["watches_open"] > 0,
        what="every open watch parked in the stall",
    )
    factory.client(CONFIGMAPS).delete("tomb-config", NS)
    api_server.compact()
    api_server.faults.drop_watches()
    api_server.faults.stall_watches = False

    tombstones = eventually(
        lambda: [
            e
            for e in controller.child_events
            if e.final_state_unknown and e.obj and e.obj["metadata"]["name"] == "tomb-config"
        ],
        what="a tombstone for the child",
    )
    assert tombstones[0].tombstone_key == f"{NS}/tomb-config"
    recreated = eventually(
        lambda: (
            (c := child_of(api_server, "tomb"))
            and c["metadata"]["uid"] != first["metadata"]["uid"]
            and c
        ),
        what="the child recreated after the tombstone",
    )
    assert recreated["data"] == {"replicas": "1"}


class Scripted(Controller):
    """Reconciles ConfigMaps by key, with outcomes scripted per call number."""

    def __init__(self, factory, outcomes, **options):
        super().__init__("scripted", **options)
        self.outcomes = list(outcomes)
        self.calls = 0
        self.cond = threading.Condition()
        self.watch(factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        with self.cond:
            outcome = self.outcomes[self.calls] if self.calls < len(self.outcomes) else None
            self.calls += 1
            self.cond.notify_all()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def wait_calls(self, n):
        deadline = time.monotonic() + WAIT
        with self.cond:
            while self.calls < n:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"expected {n} reconciles, saw {self.calls}"
                self.cond.wait(remaining)


@pytest.fixture
def scripted(api_server):
    made = []

    def make(outcomes, **options):
        factory = SharedInformerFactory(
            api_server.api_client(), metrics_registry=CollectorRegistry()
        )
        controller = Scripted(factory, outcomes, metrics_registry=CollectorRegistry(), **options)
        factory.start()
        controller.start()
        made.append((factory, controller))
        return factory, controller

    yield make
    for factory, controller in made:
        controller.stop(5)
        factory.stop(5)
        factory.api_client.close()


def test_a_failing_reconcile_backs_off_per_the_rate_limiter(scripted, caplog):
    clock = FakeClock()
    factory, c = scripted(
        [RuntimeError("first"), RuntimeError("second"), None],
        clock=clock,
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0),
    )
    with caplog.at_level(logging.CRITICAL, logger="pyinformers.controller.scripted"):
        factory.client(CONFIGMAPS).create({"metadata": {"name": "flaky", "namespace": NS}})
        c.wait_calls(1)
        clock.block_until_timers(1)  # the queue's timer is armed for the 1 s backoff
        assert c.queue.waiting_count() == 1 and c.calls == 1
        clock.step(0.999)
        assert c.queue.waiting_count() == 1 and len(c.queue) == 0 and c.calls == 1
        clock.step(0.001)
        c.wait_calls(2)
        clock.block_until_timers(1)  # now 2 s
        clock.step(1.999)
        assert c.calls == 2 and c.queue.waiting_count() == 1
        clock.step(0.001)
        c.wait_calls(3)
    eventually(lambda: c.queue.num_requeues(f"{NS}/flaky") == 0, what="forget after success")


def test_requeue_after_runs_the_reconcile_again_after_the_delay(scripted):
    clock = FakeClock()
    factory, c = scripted([Result(requeue_after=300)], clock=clock)
    factory.client(CONFIGMAPS).create({"metadata": {"name": "periodic", "namespace": NS}})
    c.wait_calls(1)
    clock.block_until_timers(1)
    clock.step(299)
    assert c.calls == 1
    clock.step(1)
    c.wait_calls(2)


def test_eight_workers_under_an_event_storm_never_overlap_a_key_and_see_every_last_change(
    api_server,
):
    registry = CollectorRegistry()
    factory = SharedInformerFactory(api_server.api_client(), metrics_registry=registry)
    lock = threading.Lock()
    active: set = set()
    overlaps = []
    last_seen: dict = {}

    class Storm(Controller):
        def __init__(self):
            super().__init__("storm", workers=8, metrics_registry=registry)
            self.configmaps = factory.lister(CONFIGMAPS)
            self.watch(factory.informer(CONFIGMAPS))

        def reconcile(self, key):
            with lock:
                if key in active:
                    overlaps.append(key)
                active.add(key)
            try:
                ns, name = meta.split_key(key)
                cm = self.configmaps.namespace(ns).get(name)
                version = int(cm["data"]["v"]) if cm else -1
                time.sleep(0.0005)  # hold the key a moment so overlaps would show
                with lock:
                    last_seen[key] = version
            finally:
                with lock:
                    active.discard(key)

    controller = Storm()
    client = factory.client(CONFIGMAPS)
    hot = [f"hot-{i}" for i in range(4)]
    for name in hot:
        client.create({"metadata": {"name": name, "namespace": NS}, "data": {"v": "0"}})
    factory.start()
    controller.start()
    final = {}
    try:

        def writer(names):
            for v in range(1, 101):
                for name in names:
                    client.patch(name, {"data": {"v": str(v)}}, NS)
            for name in names:
                final[f"{NS}/{name}"] = 100

        writers = [
            threading.Thread(target=writer, args=([name],), name=f"test-writer-{name}")
            for name in hot
        ]
        for w in writers:
            w.start()
        for w in writers:
            w.join(WAIT * 2)
        eventually(
            lambda: all(last_seen.get(k) == 100 for k in final) and len(final) == 4,
            what="every key's last change reconciled",
        )
        assert overlaps == []
    finally:
        controller.stop(5)
        factory.stop(5)
        factory.api_client.close()


def test_deleting_an_object_not_owned_is_ignored_by_the_owner_handler(api_server, running):
    factory, controller = running()
    factory.client(CONFIGMAPS).create({"metadata": {"name": "loose", "namespace": NS}})
    eventually(lambda: controller.configmaps.get("loose", namespace=NS), what="cached")
    factory.client(CONFIGMAPS).delete("loose", NS)
    eventually(
        lambda: controller.configmaps.get("loose", namespace=NS) is None,
        what="deleted from the cache",
    )
    assert not any(k.endswith("/loose") for k in controller.reconciles)
    with pytest.raises(NotFound):
        factory.client(CONFIGMAPS).get("loose", NS)
