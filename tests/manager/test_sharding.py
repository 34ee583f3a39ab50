"""Manager sharding over the embedded API server: 3 replicas, 1,000 ConfigMaps, joins, leaves, a freeze.

Replicas run in real time with short Lease settings. Every reconcile records
an interval ``(key, replica, start, end)`` on one shared log; the test checks
that no key is ever in reconcile on two replicas at once, through a join, a
clean leave and a frozen replica, and that the keys end up stamped by their
shard's owner.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict

from prometheus_client import CollectorRegistry

from pyinformers.api._client import ResourceClient
from pyinformers.controller import Controller
from pyinformers.leaderelection import ElectionTiming, assign, shard_of
from pyinformers.manager import Manager, ShardingConfig
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually

COUNT = 1000
SHARDS = 24
WAIT = 90.0


class Log:
    def __init__(self):
        self.lock = threading.Lock()
        self.intervals = []  # (key, replica, start, end)
        self.running = {}  # (replica, key) -> start

    def begin(self, replica, key):
        with self.lock:
            self.running[(replica, key)] = time.monotonic()

    def end(self, replica, key):
        with self.lock:
            start = self.running.pop((replica, key))
            self.intervals.append((key, replica, start, time.monotonic()))

    def overlaps(self):
        with self.lock:
            spans = list(self.intervals) + [
                (k, r, s, float("inf")) for (r, k), s in self.running.items()
            ]
        by_key = defaultdict(list)
        for key, replica, start, end in spans:
            by_key[key].append((start, end, replica))
        found = []
        for key, items in by_key.items():
            items.sort()
            for (_s1, e1, r1), (s2, _e2, r2) in zip(items, items[1:]):
                if r1 != r2 and s2 < e1:
                    found.append((key, r1, r2))
        return found


class Stamp(Controller):
    def __init__(self, manager, identity, log):
        super().__init__("stamp", metrics_registry=manager.registry, workers=4)
        self.identity, self.log_ = identity, log
        self.lister = manager.factory.lister(CONFIGMAPS)
        self.client = manager.factory.client(CONFIGMAPS)
        self.watch(manager.factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        self.log_.begin(self.identity, key)
        try:
            namespace, name = key.split("/")
            cm = self.lister.get(name, namespace=namespace)
            if (
                cm is not None
                and (cm["metadata"].get("annotations") or {}).get("owner") != self.identity
            ):
                self.client.patch(
                    name, {"metadata": {"annotations": {"owner": self.identity}}}, namespace
                )
        finally:
            self.log_.end(self.identity, key)


# Real-time leases, short for a test but with room for a loaded 2-core machine: with a 1.5 s renew
# deadline a replica starved of CPU for that long (three Managers, twelve workers and the embedded
# server in one process, under the test's 1,000 writes) lost its membership and stopped, and the test
# waited for a convergence that could no longer come. A real kube-apiserver needs the room too.
TIMING = ElectionTiming(lease_duration=8.0, renew_deadline=5.0, retry_period=0.5)


def make(cluster, identity, log, namespace, controller=None, group="stamp", **sharding):
    """A sharded Manager running ``controller(manager, identity, log)`` (default: :class:`Stamp`)."""
    manager = Manager(
        api_client=cluster.api_client(),
        bind_address="127.0.0.1",
        metrics_registry=CollectorRegistry(),
        metrics_port=0,
        health_port=0,
        namespace=namespace,
        tune_gc=False,
        sharding=ShardingConfig(
            group,
            shards=sharding.pop("shards", SHARDS),
            namespace=namespace,
            identity=identity,
            timing=TIMING,
            exit_on_lost_membership=False,
            **sharding,
        ),
    )
    manager.add((controller or Stamp)(manager, identity, log))
    return manager


def owners(client, namespace):
    return {
        cm["metadata"]["name"]: (cm["metadata"].get("annotations") or {}).get("owner")
        for cm in client.list_all(namespace).items
    }


def converged(client, namespace, managers, members):
    target = assign(SHARDS, members)
    for name, manager in managers.items():
        if name not in members:
            continue
        want = {s for s, m in target.items() if m == name}
        if manager.shards is None or manager.shards.held() != want:
            return False
    stamped = owners(client, namespace)
    return all(
        stamped[f"cm-{i:04d}"] == target[shard_of(f"{namespace}/cm-{i:04d}", SHARDS)]
        for i in range(COUNT)
    )


def wait_converged(client, namespace, managers, members):
    start = time.monotonic()
    eventually(
        lambda: converged(client, namespace, managers, members),
        timeout=WAIT,
        what=f"convergence on {members}",
    )
    return time.monotonic() - start


def test_three_sharded_managers_split_keys_and_hand_them_over_without_overlap(k8s):
    """On the embedded server, and on a real kube-apiserver with ``--k8s-server=real``."""
    ns = k8s.namespace
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    for i in range(COUNT):
        client.create({"metadata": {"name": f"cm-{i:04d}", "namespace": ns}})
    log = Log()
    managers = {}
    try:
        for name in ("r1", "r2", "r3"):
            managers[name] = make(k8s, name, log, ns)
            managers[name].start()
        wait_converged(client, ns, managers, ["r1", "r2", "r3"])
        spread = Counter(owners(client, ns).values())
        assert set(spread) == {"r1", "r2", "r3"}
        assert all(abs(n - COUNT / 3) <= 0.2 * COUNT / 3 for n in spread.values()), spread

        managers["r4"] = make(k8s, "r4", log, ns)  # join
        managers["r4"].start()
        wait_converged(client, ns, managers, ["r1", "r2", "r3", "r4"])

        assert managers["r2"].stop(timeout=10)  # clean leave
        wait_converged(client, ns, managers, ["r1", "r3", "r4"])

        frozen = managers["r3"].shards  # freeze: its coordinator stops renewing; its workers go on
        assert frozen.halt(10)
        wait_converged(client, ns, managers, ["r1", "r4"])
        assert not frozen.is_member()
        assert log.overlaps() == []
    finally:
        for manager in managers.values():
            manager.stop(timeout=5)
    assert log.overlaps() == []
