"""HA figures: failover, warm vs cold start, idle write rate, rebalancing, sharded throughput.

    python -m benchmarks.ha [failover] [warm] [writes] [rebalance] [throughput]

Not part of ``make bench`` (it waits out real leases: about three minutes
with everything). The API server runs in a child process
(``python -m pyinformers.testing``); leader electors and managers run with the
production timing (15 / 10 / 2 s) unless a figure says otherwise. For
throughput each shard replica is a process of its own, so replicas do not
share a GIL (the API server's own process is the ceiling on a small machine).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kubernetes import config as k8s_config

from pyinformers.api._client import ResourceClient
from pyinformers.leaderelection import LeaderElector, LeaseLock, assign, shard_of
from pyinformers.resources import CONFIGMAPS, LEASES

NS = "default"
SHARDS = 24


def _wait(predicate, timeout=120.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        time.sleep(interval)
    return time.monotonic()


class Server:
    """``python -m pyinformers.testing`` in a child process."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="pyinformers-ha-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pyinformers.testing",
                "--kubeconfig",
                self.kubeconfig,
                "--bookmark-interval",
                "30",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        _wait(lambda: os.path.exists(self.kubeconfig), 30)
        time.sleep(0.2)

    def client(self):
        return k8s_config.new_client_from_config(config_file=self.kubeconfig)

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


def _elector(api, name, identity, **kw):
    return LeaderElector(LeaseLock(api, name, NS, identity), **kw)


def failover(server, trials=3):
    """Frozen (crashed, no release) leader and clean shutdown (release_on_cancel): seconds to a new leader."""
    api = server.client()
    results = {"frozen": [], "released": []}
    for kind in ("frozen", "released"):
        for trial in range(trials):
            name = f"failover-{kind}-{trial}"
            a = _elector(api, name, "a", release_on_cancel=(kind == "released"))
            a.start()
            _wait(a.is_leader)
            b = _elector(api, name, "b")
            b.start()
            _wait(lambda: b.leader == "a")
            time.sleep(2.5)  # a few renewals observed
            t0 = time.monotonic()
            a.stop()  # frozen: stops renewing, writes nothing; released: empties the holder
            results[kind].append(_wait(b.is_leader, 60) - t0)
            b.stop()
    return {
        k: {
            "median_s": round(statistics.median(v), 2),
            "min_s": round(min(v), 2),
            "max_s": round(max(v), 2),
        }
        for k, v in results.items()
    }


def idle_writes(server, seconds=20.0):
    """API requests per second of an idle leader, an idle standby, and an idle shard member."""
    from pyinformers.leaderelection import ShardCoordinator

    api = server.client()
    out = {}
    leader = _elector(api, "idle", "leader")
    leader.start()
    _wait(leader.is_leader)
    standby = _elector(api, "idle", "standby")
    standby.start()
    w0, s0, t0 = leader.writes, standby.attempts, time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    out["leader_writes_per_s"] = round((leader.writes - w0) / elapsed, 2)
    out["standby_reads_per_s"] = round((standby.attempts - s0) / elapsed, 2)
    out["standby_writes_per_s"] = 0.0 if standby.writes == 0 else round(standby.writes / elapsed, 2)
    standby.stop()
    leader.stop()
    member = ShardCoordinator(api, group="idle", namespace=NS, identity="m1", shards=SHARDS)
    member.start()
    _wait(lambda: len(member.held()) == SHARDS)
    w0, t0 = member.member.writes, time.monotonic()
    time.sleep(seconds)
    out["shard_member_writes_per_s"] = round(
        (member.member.writes - w0) / (time.monotonic() - t0), 2
    )
    member.stop()
    return out


# -- replicas in processes: a Manager with a stamping controller -------------------------------------------------
REPLICA = r"""
import json, sys, time
from pyinformers.controller import Controller, EnqueueMapped
from pyinformers.manager import Manager, ShardingConfig, LeaderElectionConfig
from pyinformers.resources import CONFIGMAPS

kubeconfig, identity, mode = sys.argv[1:4]
WORK = 0.002  # seconds of CPU per reconcile (a controller's own computation), then one PATCH


class Stamp(Controller):
    def __init__(self, manager):
        super().__init__("stamp", metrics_registry=False, workers=4)
        self.lister = manager.factory.lister(CONFIGMAPS)
        self.client = manager.factory.client(CONFIGMAPS)
        self.first = None
        informer = manager.factory.informer(CONFIGMAPS)
        self.watch(informer)
        # One write to the "trigger" ConfigMap wakes every key (each replica keeps only its own).
        self.watch(informer, EnqueueMapped(self.fan_out))

    def fan_out(self, obj):
        if obj["metadata"]["name"] != "trigger":
            return []
        return [k for k in self.lister.indexer.list_keys() if not k.endswith("/trigger")]

    def reconcile(self, key):
        if self.first is None:
            self.first = time.monotonic()
            print(json.dumps({"first_reconcile": self.first, "leading_since": manager.leading_since}), flush=True)
        ns, name = key.split("/")
        cm = self.lister.get(name, namespace=ns)
        trigger = self.lister.get("trigger", namespace=ns)
        if cm is None or name == "trigger":
            return None
        want = f"{identity}:{((trigger or {}).get('data') or {}).get('round', '0')}"
        if (cm["metadata"].get("annotations") or {}).get("seen") != want:
            end = time.perf_counter() + WORK
            while time.perf_counter() < end:
                pass
            self.client.patch(name, {"metadata": {"annotations": {"seen": want}}}, ns)


options = dict(kubeconfig=kubeconfig, metrics_port=0, health_port=0, namespace="default")
if mode == "shard":
    options["sharding"] = ShardingConfig("bench", shards=24, namespace="default", identity=identity,
                                         exit_on_lost_membership=False)
elif mode == "leader":
    options["leader_election"] = LeaderElectionConfig(
        name="bench-leader", namespace="default", identity=identity, exit_on_lost_lease=False
    )
manager = Manager(**options)
manager.add(Stamp(manager))
print(json.dumps({"started": time.monotonic()}), flush=True)
manager.run()
"""


class Replica:
    def __init__(self, server, identity, mode):
        self.identity = identity
        self.proc = subprocess.Popen(
            [sys.executable, "-c", REPLICA, server.kubeconfig, identity, mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _seed(server, count):
    client = ResourceClient(server.client(), CONFIGMAPS)
    existing = {cm["metadata"]["name"] for cm in client.list_all(NS).items}
    for i in range(count):
        if f"cm-{i:04d}" not in existing:
            client.create({"metadata": {"name": f"cm-{i:04d}", "namespace": NS}})
    if "trigger" not in existing:
        client.create({"metadata": {"name": "trigger", "namespace": NS}, "data": {"round": "0"}})
    return client


def _all_seen(server, count, expect):
    items = ResourceClient(server.client(), CONFIGMAPS).list_all(NS).items
    seen = {
        cm["metadata"]["name"]: (cm["metadata"].get("annotations") or {}).get("seen")
        for cm in items
    }
    return all(seen.get(f"cm-{i:04d}") == expect(f"default/cm-{i:04d}") for i in range(count))


def warm_vs_cold(server, count=3000):
    """Seconds from leadership to the first reconcile: warm standby vs a replica that starts from nothing."""
    _seed(server, count)
    a = Replica(server, "warm-a", "leader")
    _wait(lambda: any("first_reconcile" in m for m in a.lines), 120)
    b = Replica(server, "warm-b", "leader")
    time.sleep(8)  # b syncs its cache while a leads
    a.stop()  # graceful: drains, releases
    _wait(lambda: any("first_reconcile" in m for m in b.lines), 120)
    warm = next(m for m in b.lines if "first_reconcile" in m)
    b.stop()
    cold = Replica(
        server, "cold", "plain"
    )  # no election: start() -> list -> sync -> first reconcile
    _wait(lambda: any("first_reconcile" in m for m in cold.lines), 120)
    started = next(m for m in cold.lines if "started" in m)["started"]
    first = next(m for m in cold.lines if "first_reconcile" in m)["first_reconcile"]
    cold.stop()
    return {
        "objects": count,
        "warm_leader_to_first_reconcile_s": round(
            warm["first_reconcile"] - warm["leading_since"], 3
        ),
        "cold_start_to_first_reconcile_s": round(first - started, 3),
    }


def rebalance(server, count=1000):
    """Sharded replicas in processes: seconds and keys moved when one joins, one leaves cleanly, one freezes."""
    client = _seed(server, count)
    out = {}
    replicas = {n: Replica(server, n, "shard") for n in ("s1", "s2", "s3")}

    def expect_for(members):
        owner = assign(SHARDS, members)
        return lambda key: f"{owner[shard_of(key, SHARDS)]}:0"

    t0 = time.monotonic()
    _wait(lambda: _all_seen(server, count, expect_for(["s1", "s2", "s3"])), 180, 0.2)
    out["three_replicas_first_convergence_s"] = round(time.monotonic() - t0, 2)
    leases = ResourceClient(server.client(), LEASES)

    def join_s4():
        replicas["s4"] = Replica(server, "s4", "shard")
        # Rebalancing starts when s4 is a member (its caches synced): not counting process start-up.
        _wait(
            lambda: any(
                item["spec"].get("holderIdentity") == "s4" for item in leases.list_all(NS).items
            ),
            120,
            0.05,
        )

    for step, members, action in (
        ("join", ["s1", "s2", "s3", "s4"], join_s4),
        ("leave", ["s1", "s3", "s4"], lambda: replicas.pop("s2").stop()),
        (
            "freeze",
            ["s1", "s4"],
            lambda: os.kill(replicas["s3"].proc.pid, 19),
        ),  # SIGSTOP: frozen, no release
    ):
        before = assign(SHARDS, [m for m in ("s1", "s2", "s3", "s4") if m in replicas])
        t0 = time.monotonic()
        action()
        if step == "join":
            t0 = time.monotonic()  # from the moment s4 is a member
        _wait(lambda: _all_seen(server, count, expect_for(members)), 180, 0.2)
        after = assign(SHARDS, members)
        moved = sum(
            1
            for i in range(count)
            if before.get(shard_of(f"default/cm-{i:04d}", SHARDS))
            != after[shard_of(f"default/cm-{i:04d}", SHARDS)]
        )
        out[step] = {"seconds": round(time.monotonic() - t0, 2), "keys_moved": moved}
    os.kill(replicas["s3"].proc.pid, 18)  # SIGCONT, then stop it
    for r in replicas.values():
        r.stop()
    out["leases_in_group"] = len(
        leases.list_all(NS, label_selector={"sharding.pyinformers.io/group": "bench"}).items
    )
    del client
    return out


def throughput(server, count=1000):
    """Reconciles per second (2 ms of CPU and one PATCH each) with 1, 2 and 3 shard replicas, one process each.

    One write to the ``trigger`` ConfigMap wakes every key on every replica;
    each replica reconciles the keys of its shards.
    """
    client = _seed(server, count)
    out = {}
    for n in (1, 2, 3):
        names = [f"t{n}-{i}" for i in range(n)]
        replicas = [Replica(server, name, "shard") for name in names]
        owner = assign(SHARDS, names)
        previous = client.get("trigger", NS)["data"]["round"]
        _wait(
            lambda: _all_seen(server, count, lambda k: f"{owner[shard_of(k, SHARDS)]}:{previous}"),
            240,
            0.2,
        )
        t0 = time.monotonic()
        client.patch("trigger", {"data": {"round": str(n)}}, NS)
        _wait(
            lambda: _all_seen(server, count, lambda k: f"{owner[shard_of(k, SHARDS)]}:{n}"),
            240,
            0.05,
        )
        elapsed = time.monotonic() - t0
        out[f"{n}_replicas"] = {
            "reconciles_per_s": round(count / elapsed, 1),
            "seconds": round(elapsed, 2),
        }
        for r in replicas:
            r.stop()
    return out


def main(argv=None):
    wanted = set(argv or sys.argv[1:]) or {"failover", "writes", "warm", "rebalance", "throughput"}
    results = {}
    for name, fn in (
        ("failover", failover),
        ("writes", idle_writes),
        ("warm", warm_vs_cold),
        ("rebalance", rebalance),
        ("throughput", throughput),
    ):
        if name not in wanted:
            continue
        server = Server()
        try:
            started = time.monotonic()
            results[name] = fn(server)
            print(
                name, json.dumps(results[name]), f"({time.monotonic() - started:.0f} s)", flush=True
            )
        finally:
            server.close()
    return results


if __name__ == "__main__":
    main()
