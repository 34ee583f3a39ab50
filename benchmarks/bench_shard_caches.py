"""Shard-aware caches on the real control plane: memory per replica, moves, and no overlap under faults.

30,000 Pods (the benchmarks' realistic Pod, :mod:`benchmarks.pods`; 3,000
with ``BENCH_QUICK=1``) in one namespace of a fresh control plane (etcd +
kube-apiserver from ``make envtest``). Each replica is a process of its
own (:mod:`benchmarks.shard_replica`: a Manager with one controller whose
reconcile reads its Pod from the cache), 24 shards, the shard group's
default timing (15 / 10 / 2 s). The phases:

1. **whole**: one unsharded replica (it caches every Pod); its RSS once
   synced and quiet is the baseline.
2. **three**: three replicas with ``shard_caches=True`` start together;
   from their start until the shards are spread, every Pod carries its
   shard label (30,000 label writes, done by the replicas) and each
   replica caches exactly the Pods of the shards it holds. Each one's RSS
   then, against the baseline's (the goal: at most 0.45x). Labelling is a
   one-time cost (its metadata-only view of the unlabelled Pods fills and
   drains, and the allocator keeps some of that), so the three are then
   restarted on the labelled Pods: their RSS is the steady state's, what
   every later start and roll-out gives.
3. From here a writer changes ~20 random Pods a second (annotations).
   **join**: a fourth replica; the time from its membership to every cache
   holding exactly its shards again. **leave**: one replica stops
   (SIGTERM: drains, releases). **freeze**: one is SIGSTOPped (it releases
   nothing: its shards move when its membership lapses); then SIGCONTed.
   **kill**: one is SIGKILLed. Each time: seconds until the survivors hold
   all shards and cache exactly them.
4. **overlap**: every replica logged the start and end of each reconcile
   (one monotonic clock for the machine): no key may be reconciled by two
   replicas at once. A reconcile in flight when its replica was frozen is
   counted apart (the lease scheme's stated residual assumption is that one
   finishes within ``lease_duration - renew_deadline``; a frozen one cannot).
   Reconciles that did not find their Pod in the cache are counted too.

Results go to ``benchmarks/report/results/shard_caches.json``; skipped with
one line when the control plane's binaries are missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchmarks.bench_e2e import (
    QUICK,
    RESULTS,
    ROOT,
    binaries_missing,
    control_plane_class,
    parallel,
    proc_rss_kb,
    settle,
)
from benchmarks.pods import make_pod

NAMESPACE = "bench-shards"
SHARDS = 24
PODS_N = 3_000 if QUICK else 30_000
CHURN_PER_SECOND = 20.0
GOAL = 0.45


def seed_pod(i: int) -> dict:
    """The benchmarks' Pod without what a create may not set (or what the server sets itself)."""
    pod = make_pod(i, NAMESPACE)
    metadata = pod["metadata"]
    for field in (
        "uid",
        "creationTimestamp",
        "resourceVersion",
        "managedFields",
        "ownerReferences",
    ):
        metadata.pop(field, None)
    pod.pop("status", None)
    return pod


class Replica:
    """One :mod:`benchmarks.shard_replica` process; its latest status line and exit time."""

    def __init__(self, kubeconfig: str, identity: str, mode: str, folder: Path) -> None:
        self.identity = identity
        self.log = folder / f"{identity}.log"
        self.stderr_path = folder / f"{identity}.stderr"
        self.stderr = open(self.stderr_path, "wb")  # noqa: SIM115 (closed in wait)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.shard_replica",
                kubeconfig,
                identity,
                mode,
                NAMESPACE,
                str(self.log),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        self.status: dict[str, Any] = {}
        self.started = time.monotonic()
        self.ended: float | None = None
        self.frozen: tuple[float, float] | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.status = json.loads(line)
        self.ended = time.monotonic()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def held(self) -> set[int]:
        return set(self.status.get("held") or ())

    def signal(self, number: int) -> float:
        at = time.monotonic()
        os.kill(self.proc.pid, number)
        return at

    def wait(self, timeout: float = 60.0) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.ended = self.ended or time.monotonic()
        self.stderr.close()


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.1) -> float:
    """Poll ``predicate`` until true; the monotonic time it became true."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench_shard_caches: {what} not reached in {timeout:.0f}s")
        time.sleep(interval)


class Cluster:
    """What the driver knows of the Pods: each one's shard, and how many a set of shards holds."""

    def __init__(self, names: list[str]) -> None:
        from pyinformers.leaderelection import shard_of

        self.per_shard = Counter(shard_of(f"{NAMESPACE}/{name}", SHARDS) for name in names)

    def count(self, shards: set[int]) -> int:
        return sum(self.per_shard[s] for s in shards)

    def spread_over(self, replicas: list[Replica]) -> bool:
        """Every replica holds what the assignment over them says, synced, caching exactly those Pods."""
        from pyinformers.leaderelection import assign

        owner = assign(SHARDS, [r.identity for r in replicas])
        for replica in replicas:
            if not replica.alive():
                replica.stderr.flush()
                lines = replica.stderr_path.read_text(errors="replace").splitlines()
                said = [line for line in lines if not line.startswith((" ", "Traceback"))]
                raise RuntimeError(f"replica {replica.identity} ended: " + " | ".join(said[-8:]))
            want = {s for s, member in owner.items() if member == replica.identity}
            status = replica.status
            if replica.held() != want or not status.get("synced"):
                return False
            if status.get("cached") != self.count(want):
                return False
        return True


def unlabelled(pods: Any) -> int:
    from pyinformers.api.meta import SHARD_LABEL

    page = pods.list(NAMESPACE, label_selector=f"!{SHARD_LABEL}", limit=1, metadata_only=True)
    return len(page.items) + int(page.remaining_item_count or 0)


class Churn(threading.Thread):
    """Changes ~CHURN_PER_SECOND random Pods a second until stopped (an annotation each)."""

    def __init__(self, pods: Any, names: list[str]) -> None:
        super().__init__(name="churn", daemon=True)
        self.pods, self.names = pods, names
        self.done = threading.Event()
        self.writes = 0
        self.errors = 0

    def run(self) -> None:
        import random

        rng = random.Random(7)
        while not self.done.wait(1.0 / CHURN_PER_SECOND):
            name = rng.choice(self.names)
            try:
                self.pods.patch(
                    name,
                    {"metadata": {"annotations": {"bench/churn": str(self.writes)}}},
                    NAMESPACE,
                )
                self.writes += 1
            except Exception:  # the API server is busy: the next one goes on
                self.errors += 1


def reconciles(replica: Replica) -> list[tuple[str, int, int | None]]:
    """(key, start ns, end ns or None) of every reconcile ``replica`` logged."""
    started: dict[str, int] = {}
    out: list[tuple[str, int, int | None]] = []
    for line in replica.log.read_text().splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue  # a line cut by a SIGKILL
        mark, key, at = parts[0], parts[1], int(parts[2])
        if mark == "b":
            started[key] = at
        elif key in started:
            out.append((key, started.pop(key), at))
    out.extend((key, at, None) for key, at in started.items())
    return out


def overlap(replicas: list[Replica]) -> dict:
    """Pairs of reconciles of one key by two replicas at once, counted apart when one spans a freeze."""
    by_key: dict[str, list[tuple[int, int, str, bool]]] = defaultdict(list)
    total = 0
    for replica in replicas:
        ended_ns = int((replica.ended or time.monotonic()) * 1e9)
        frozen = replica.frozen
        for key, start, end in reconciles(replica):
            total += 1
            end = end if end is not None else ended_ns  # cut by a kill or a stop
            across_freeze = bool(frozen and start <= frozen[0] * 1e9 <= end)
            by_key[key].append((start, end, replica.identity, across_freeze))
    overlaps = overlaps_frozen = 0
    for intervals in by_key.values():
        intervals.sort()
        reach, who, frozen_flag = -1, "", False
        for start, end, identity, across in intervals:
            if start < reach and identity != who:
                if across or frozen_flag:
                    overlaps_frozen += 1
                else:
                    overlaps += 1
            if end > reach:
                reach, who, frozen_flag = end, identity, across
    return {
        "reconciles": total,
        "keys": len(by_key),
        "overlaps": overlaps,
        "overlaps_with_a_frozen_reconcile": overlaps_frozen,
    }


def main() -> None:
    missing = binaries_missing()
    if missing:
        print(
            f"bench_shard_caches skipped: no control plane binaries ({missing}; run make envtest)"
        )
        return
    ControlPlane, _ = control_plane_class()
    from pyinformers.api import ResourceClient
    from pyinformers.resources import NAMESPACES, PODS

    data: dict[str, Any] = {"pods": PODS_N, "shards": SHARDS, "cpus": os.cpu_count()}
    data["load_at_start"] = os.getloadavg()
    with (
        tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp,
        ControlPlane() as cp,
    ):
        folder = Path(tmp)
        api = cp.api_client()
        kubeconfig = str(cp.write_kubeconfig(folder / "kubeconfig"))
        ResourceClient(api, NAMESPACES).create({"metadata": {"name": NAMESPACE}})
        pods = ResourceClient(api, PODS)
        t0 = time.perf_counter()
        parallel(lambda i: pods.create(seed_pod(i)), list(range(PODS_N)))
        data["seed_seconds"] = round(time.perf_counter() - t0, 1)
        names = [seed_pod(i)["metadata"]["name"] for i in range(PODS_N)]
        cluster = Cluster(names)
        print(f"  seeded {PODS_N} Pods in {data['seed_seconds']} s", flush=True)

        # 1. one unsharded replica: the baseline
        whole = Replica(kubeconfig, "whole", "whole", folder)
        ready = wait_for(
            lambda: whole.status.get("synced") and whole.status.get("cached") == PODS_N,
            300,
            "the unsharded replica's sync",
        )
        settle(whole.proc.pid, limit=120)
        data["whole"] = {
            "sync_seconds": round(ready - whole.started, 2),
            **proc_rss_kb(whole.proc.pid),
        }
        whole.signal(signal.SIGTERM)
        whole.wait()
        print(f"  whole: {data['whole']}", flush=True)

        # 2. three shard-cached replicas: first on unlabelled Pods, then restarted on labelled ones
        base = data["whole"]["rss_kb"]

        def three_replicas(tag: str) -> tuple[list[Replica], dict]:
            three = [Replica(kubeconfig, f"{tag}{i}", "cached", folder) for i in (1, 2, 3)]
            started = min(r.started for r in three)
            labelled = wait_for(lambda: unlabelled(pods) == 0, 900, "every Pod labelled", 1.0)
            try:
                spread = wait_for(lambda: cluster.spread_over(three), 300, "three replicas spread")
            except TimeoutError:
                for r in three:
                    want = cluster.count(r.held())
                    print(f"  {r.identity}: {r.status} (its shards hold {want})", flush=True)
                raise
            for replica in three:
                settle(replica.proc.pid, limit=120)
            rss = [proc_rss_kb(r.proc.pid) for r in three]
            figures = {
                "labelled_seconds": round(labelled - started, 1),
                "spread_seconds": round(spread - started, 1),
                "replicas": [
                    {"identity": r.identity, "shards": len(r.held()), "cached": r.status["cached"]}
                    | m
                    for r, m in zip(three, rss)
                ],
                "rss_ratio": [round(m["rss_kb"] / base, 3) for m in rss],
                "peak_rss_ratio": [round(m["peak_rss_kb"] / base, 3) for m in rss],
                "goal": GOAL,
            }
            return three, figures

        first, data["three_labelling"] = three_replicas("l")
        print(f"  three, labelling every Pod: {data['three_labelling']}", flush=True)
        for replica in first:
            replica.signal(signal.SIGTERM)
        for replica in first:
            replica.wait()
        three, data["three"] = three_replicas("r")
        print(f"  three, restarted: {data['three']}", flush=True)

        # 3. moves under churn
        churn = Churn(pods, names)
        churn.start()
        everyone = list(three)
        moves: dict[str, Any] = {}

        def survivors() -> list[Replica]:
            return [r for r in everyone if r.alive() and r.frozen is None]

        r4 = Replica(kubeconfig, "r4", "cached", folder)
        everyone.append(r4)
        member = wait_for(lambda: bool(r4.status.get("member")), 300, "r4's membership")
        done = wait_for(lambda: cluster.spread_over(survivors()), 300, "the join's spread")
        moves["join"] = {
            "seconds": round(done - member, 2),
            "start_to_member": round(member - r4.started, 2),
        }

        leaving = three[1]
        at = leaving.signal(signal.SIGTERM)
        leaving.wait()
        done = wait_for(lambda: cluster.spread_over(survivors()), 300, "the leave's spread")
        moves["leave"] = {"seconds": round(done - at, 2)}

        frozen = three[2]
        at = frozen.signal(signal.SIGSTOP)
        frozen.frozen = (at, at)
        done = wait_for(lambda: cluster.spread_over(survivors()), 300, "the freeze's spread")
        moves["freeze"] = {"seconds": round(done - at, 2)}
        thawed = frozen.signal(signal.SIGCONT)
        frozen.frozen = (at, thawed)
        frozen.wait(60)  # its membership lapsed: the Manager stops and the process ends
        moves["freeze"]["thawed_exit_seconds"] = round((frozen.ended or thawed) - thawed, 2)

        at = r4.signal(signal.SIGKILL)
        r4.wait()
        done = wait_for(lambda: cluster.spread_over(survivors()), 300, "the kill's spread")
        moves["kill"] = {"seconds": round(done - at, 2)}
        churn.done.set()
        churn.join()
        moves["churn_writes"], moves["churn_errors"] = churn.writes, churn.errors
        data["moves"] = moves
        print(f"  moves: {moves}", flush=True)

        last = three[0]
        last.signal(signal.SIGTERM)
        last.wait()
        data["overlap"] = overlap(first + everyone)
        data["misses"] = {r.identity: r.status.get("misses", 0) for r in first + everyone}
        data["load_at_end"] = os.getloadavg()
        print(f"  overlap: {data['overlap']}  misses: {data['misses']}", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "shard_caches.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
