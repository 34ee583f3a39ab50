"""Controller benchmarks: reconcile latency under load, and no-op reconcile throughput.

**Latency.** The in-process API server, a SharedInformerFactory and a
controller watching ConfigMaps, in one process. Writers patch 200 ConfigMaps
round-robin at a target of 500 writes/s for a few seconds; each write
carries the time it was sent (``data.t``). A reconcile reads its object from
the lister and records ``now - data.t``: the time from a write to the start
of a reconcile that sees it. The baseline, measured on the same writes at the
same time, is a bare watch stream on the same resource (``ResourceClient.watch``,
one thread, no cache, no queue): ``now - data.t`` when the event arrives.
The ratio says what the informer, handler, queue and worker hand-offs add.

**Throughput.** 40,000 distinct keys pre-loaded into a controller's queue,
then 1, 4 and 16 workers run a no-op ``reconcile`` until it is empty (with
metrics, logging context and the full result handling on). Baseline: the
same keys in a ``queue.Queue`` drained by the same number of plain threads
calling a no-op function (``get`` / call / ``task_done``). A second
reference, "own queue, bare loop", drains the controller's kind of queue (a
named ``RateLimitingQueue`` with its metrics) with a hand-written
``get``/``forget``/``done`` loop: the ratio against it is what the
``Controller`` layer itself costs. Best of 5 (threaded runs are bimodal under the GIL).

Everything runs on one machine with two shared cores and the GIL, so the
absolute numbers say little; the ratios are the point. Total < ~40 s.
"""

from __future__ import annotations

import logging
import queue as stdlib_queue
import threading
import time

from prometheus_client import CollectorRegistry

from pyinformers.api import meta
from pyinformers.cache._factory import SharedInformerFactory
from pyinformers.controller import Controller
from pyinformers.resources import CONFIGMAPS

OBJECTS = 200
RATE = 500.0  # target writes per second
DURATION = 4.0  # seconds of writing
KEYS = 40_000
REPEATS = 5
NS = "default"


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100.0 * (len(ordered) - 1))))
    return ordered[index]


# -- latency ---------------------------------------------------------------------------------
class _Timed(Controller):
    def __init__(self, factory, registry):
        super().__init__("bench-latency", workers=2, metrics_registry=registry)
        self.configmaps = factory.lister(CONFIGMAPS)
        self.latencies: list[float] = []
        self.watch(factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        now = time.monotonic()
        ns, name = meta.split_key(key)
        cm = self.configmaps.namespace(ns).get(name)
        if cm and cm.get("data", {}).get("t"):
            self.latencies.append(now - float(cm["data"]["t"]))


def _latency() -> dict:
    from pyinformers.testing import ApiServer

    with ApiServer() as server:
        setup = server.api_client()
        client = SharedInformerFactory(setup).client(CONFIGMAPS)
        for i in range(OBJECTS):
            client.create({"metadata": {"name": f"cm-{i}", "namespace": NS}, "data": {}})
        registry = CollectorRegistry()
        factory = SharedInformerFactory(server.api_client(), metrics_registry=registry)
        controller = _Timed(factory, registry)
        factory.start()
        controller.start()

        # the baseline: a bare watch from now on, consumed on its own thread
        rv = client.list(NS, limit=1).resource_version
        baseline: list[float] = []
        stream = client.watch(NS, resource_version=rv, allow_bookmarks=False)

        def consume():
            try:
                for event in stream:
                    now = time.monotonic()
                    t = (event.object.get("data") or {}).get("t")
                    if t:
                        baseline.append(now - float(t))
            except Exception:
                pass  # closed

        consumer = threading.Thread(target=consume, name="bench-watch-baseline", daemon=True)
        consumer.start()
        controller.latencies.clear()

        writes = [0]
        writers = 2
        interval = writers / RATE
        start = time.monotonic()

        def writer(offset):
            c = SharedInformerFactory(server.api_client()).client(CONFIGMAPS)
            n = 0
            next_at = start
            while True:
                now = time.monotonic()
                if now - start >= DURATION:
                    return
                if now < next_at:
                    time.sleep(next_at - now)
                name = f"cm-{(offset + n * writers) % OBJECTS}"
                c.patch(name, {"data": {"t": repr(time.monotonic())}}, NS)
                writes[0] += 1
                n += 1
                next_at += interval

        threads = [
            threading.Thread(target=writer, args=(i,), name=f"bench-writer-{i}")
            for i in range(writers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        # let the tail drain (bounded)
        deadline = time.monotonic() + 5
        while (
            len(controller.queue) or controller.queue.processing_count()
        ) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        stream.close()
        consumer.join(2)
        controller.stop(5)
        factory.stop(5)
        return {
            "writes_per_s": writes[0] / elapsed,
            "reconciles": len(controller.latencies),
            "events": len(baseline),
            "p50": _percentile(controller.latencies, 50),
            "p99": _percentile(controller.latencies, 99),
            "base_p50": _percentile(baseline, 50),
            "base_p99": _percentile(baseline, 99),
        }


# -- throughput ------------------------------------------------------------------------------
class _Noop(Controller):
    watches_optional = True  # its keys are pre-loaded into the queue

    def reconcile(self, key):
        return None


def _ours(workers: int, keys: list[str]) -> float:
    c = _Noop(f"bench-noop-{workers}", workers=workers, metrics_registry=CollectorRegistry())
    for key in keys:
        c.queue.add(key)
    start = time.perf_counter()
    c.start()
    q = c.queue
    while len(q) or q.processing_count():
        time.sleep(0.001)
    elapsed = time.perf_counter() - start
    c.stop(5)
    return len(keys) / elapsed


def _queue_loop(workers: int, keys: list[str]) -> float:
    """The controller's own queue (named, with metrics) drained by a hand-written loop."""
    from pyinformers.workqueue import RateLimitingQueue

    q = RateLimitingQueue(name=f"bench-loop-{workers}", metrics_registry=CollectorRegistry())
    for key in keys:
        q.add(key)

    def work():
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            q.forget(key)
            q.done(key)

    threads = [
        threading.Thread(target=work, name=f"bench-loop-{i}", daemon=True) for i in range(workers)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    while len(q) or q.processing_count():
        time.sleep(0.001)
    elapsed = time.perf_counter() - start
    q.shutdown()
    for t in threads:
        t.join()
    return len(keys) / elapsed


def _baseline(workers: int, keys: list[str]) -> float:
    q: stdlib_queue.Queue = stdlib_queue.Queue()
    for key in keys:
        q.put(key)

    def noop(key):
        return None

    def work():
        while True:
            key = q.get()
            if key is None:
                q.task_done()
                return
            noop(key)
            q.task_done()

    threads = [
        threading.Thread(target=work, name=f"bench-baseline-{i}", daemon=True)
        for i in range(workers)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    q.join()
    elapsed = time.perf_counter() - start
    for _ in threads:
        q.put(None)
    for t in threads:
        t.join()
    return len(keys) / elapsed


def main() -> None:
    logging.getLogger("pyinformers").setLevel(logging.WARNING)
    keys = [f"ns/obj-{i}" for i in range(KEYS)]
    print(f"no-op reconciles/s, {KEYS} distinct keys, best of {REPEATS}")
    print(
        f"{'workers':>8} {'controller':>12} {'queue.Queue pool':>17} {'ratio':>7} "
        f"{'own queue, bare loop':>21} {'ratio':>7}"
    )
    for workers in (1, 4, 16):
        ours = max(_ours(workers, keys) for _ in range(REPEATS))
        base = max(_baseline(workers, keys) for _ in range(REPEATS))
        loop = max(_queue_loop(workers, keys) for _ in range(REPEATS))
        print(
            f"{workers:>8} {ours:>12,.0f} {base:>17,.0f} {ours / base:>7.2f} {loop:>21,.0f} {ours / loop:>7.2f}"
        )

    r = _latency()
    print()
    print(
        f"latency from a server write to the reconcile start, {OBJECTS} ConfigMaps, "
        f"{r['writes_per_s']:.0f} writes/s achieved (target {RATE:.0f}), {DURATION:.0f} s"
    )
    print(f"{'':>28} {'p50 ms':>8} {'p99 ms':>8}")
    print(
        f"{'controller (reconcile start)':>28} {r['p50'] * 1e3:>8.2f} {r['p99'] * 1e3:>8.2f}   ({r['reconciles']} reconciles)"
    )
    print(
        f"{'bare watch (event arrival)':>28} {r['base_p50'] * 1e3:>8.2f} {r['base_p99'] * 1e3:>8.2f}   ({r['events']} events)"
    )
    print(f"{'ratio':>28} {r['p50'] / r['base_p50']:>8.2f} {r['p99'] / r['base_p99']:>8.2f}")


if __name__ == "__main__":
    main()
