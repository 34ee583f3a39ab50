"""One replica of :mod:`benchmarks.bench_shard_caches`: a Manager over the Pods of one namespace.

    python -m benchmarks.shard_replica KUBECONFIG IDENTITY MODE NAMESPACE LOG

``MODE`` is ``whole`` (no sharding: one replica caching everything, the
baseline), ``sharded`` (sharding, every object cached) or ``cached``
(sharding with ``shard_caches=True``). The controller's reconcile reads its
Pod from the lister and does about a millisecond of work; it appends
``b KEY NS`` and ``e KEY NS`` lines (``time.monotonic_ns()``, one clock for
every process of the machine) to ``LOG`` around it, so the driver can check
that no key was ever reconciled by two replicas at once, and counts the
reconciles of a key whose Pod was not in the cache (a cache that does not
hold what the replica reconciles).

Every quarter second it prints one JSON line: the shards held, whether the
caches are synced, the Pods cached, the misses and the process's RSS. The
shard group's timing is the production default (15 / 10 / 2 s): a shorter
one measures faster moves, but on a small machine whose two cores also run
the API server, etcd and the other replicas, a replica listing its shards
can miss a 4 s renew deadline. A lost membership stops the Manager (no
exit), so a frozen and thawed replica reports what it did.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import Any

from pyinformers.controller import Controller
from pyinformers.leaderelection import ElectionTiming
from pyinformers.manager import Manager, ShardingConfig
from pyinformers.resources import PODS

SHARDS = 24
TIMING = ElectionTiming()  # the production defaults: 15 / 10 / 2 s
WORK = 0.001  # seconds of CPU per reconcile


class PodReader(Controller):
    """Reads each Pod it is given from the cache; logs the reconcile's start and end."""

    def __init__(self, manager: Manager, log: Any) -> None:
        super().__init__("podreader", metrics_registry=False, workers=2)
        self.lister = manager.factory.lister(PODS)
        self.watch(manager.factory.informer(PODS))
        self.journal = log
        self.lock = threading.Lock()
        self.misses = 0
        self.reconciles = 0

    def _line(self, mark: str, key: str) -> None:
        with self.lock:
            self.journal.write(f"{mark} {key} {time.monotonic_ns()}\n")
            self.journal.flush()

    def reconcile(self, key: str) -> None:
        self._line("b", key)
        try:
            namespace, name = key.split("/")
            pod = self.lister.get(name, namespace=namespace)
            if pod is None:
                with self.lock:
                    self.misses += 1
            end = time.perf_counter() + WORK
            while time.perf_counter() < end:
                pass
            with self.lock:
                self.reconciles += 1
        finally:
            self._line("e", key)


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def report(manager: Manager, controller: PodReader) -> None:
    informer = manager.factory.informer(PODS)
    while True:
        coordinator = manager.shards
        status = {
            "t": time.monotonic(),
            "held": sorted(coordinator.held()) if coordinator is not None else None,
            "member": coordinator.is_member() if coordinator is not None else None,
            "synced": informer.has_synced(),
            "cached": len(informer.indexer),  # a count, not a 30,000-key list every 0.25 s
            "misses": controller.misses,
            "reconciles": controller.reconciles,
            "rss_kb": rss_kb(),
            "lost": manager.lost_lease,
        }
        print(json.dumps(status), flush=True)
        time.sleep(0.25)


def main(argv: list[str]) -> None:
    kubeconfig, identity, mode, namespace, log_path = argv
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("pyinformers.leaderelection").setLevel(logging.INFO)
    options: dict[str, Any] = {
        "kubeconfig": kubeconfig,
        "metrics_port": 0,
        "health_port": 0,
        "namespace": namespace,
    }
    if mode in ("sharded", "cached"):
        options["sharding"] = ShardingConfig(
            "bench-shards",
            shards=SHARDS,
            namespace=namespace,
            identity=identity,
            timing=TIMING,
            exit_on_lost_membership=False,
            shard_caches=mode == "cached",
        )
    elif mode != "whole":
        raise SystemExit(f"unknown mode {mode!r}: whole, sharded or cached")
    with open(log_path, "a", buffering=1) as log:
        manager = Manager(**options)
        controller = PodReader(manager, log)
        manager.add(controller)
        threading.Thread(target=report, args=(manager, controller), daemon=True).start()
        manager.run()


if __name__ == "__main__":
    main(sys.argv[1:])
