"""Work queue throughput: our :class:`Queue` against :class:`queue.Queue`, same run.

A *cycle* is one add (``put``) plus, for the item it made waiting, one get and
one done (``task_done``). Scenarios:

* one thread: add a batch of 100 keys, then get + done until empty (a
  non-blocking get that finds the queue empty ends the batch);
* 1 producer / 1 consumer and 2 producers / 2 consumers on threads;
* each with unique keys, and with 10% duplicate adds (a key added again
  right after itself). ``queue.Queue`` hands duplicates out twice; ours
  queues a key once, which is the point of it, so the rate counts adds.

Then the cost of a retry: ``add_rate_limited`` + ``forget`` on a
:class:`RateLimitingQueue` with the default controller rate limiter, against a
plain add + get + done cycle; and the cost of metrics: a named queue (which
records Prometheus metrics) against an unnamed one.

Threaded runs are bimodal (lock convoys under the GIL) and the machine is
shared, so each figure is the median of several repetitions, alternating
ours and the baseline; the ratio (ours / baseline ops/s) is taken per
repetition and reported with its range, beside the ratio of process CPU time
(all threads), which follows the neighbours' load less.
"""

from __future__ import annotations

import json
import queue as stdlib_queue
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from prometheus_client import CollectorRegistry

from pyinformers.controller import Controller
from pyinformers.workqueue import Queue, RateLimitingQueue

RESULTS = Path(__file__).resolve().parent / "report" / "results"
ADDS = 60_000  # adds per measurement
BATCH = 100
REPEATS = 7
PRODUCERS = 10  # producer threads of the many-producers row (ten informers, one controller)


def _keys(n: int, duplicates: bool, offset: int = 0) -> list[str]:
    """n keys; with duplicates, every tenth add repeats the previous key."""
    keys = []
    for i in range(n):
        if duplicates and i % 10 == 9:
            keys.append(keys[-1])
        else:
            keys.append(f"ns/obj-{offset + i}")
    return keys


# -- one thread ---------------------------------------------------------------------
def _ours_single(keys: list[str], *, named: bool = False) -> float:
    q = Queue("bench", metrics_registry=CollectorRegistry()) if named else Queue()
    add, get, done = q.add, q.get, q.done
    start = time.perf_counter()
    for base in range(0, len(keys), BATCH):
        for key in keys[base : base + BATCH]:
            add(key)
        try:
            while True:
                item, _ = get(0)
                done(item)
        except TimeoutError:  # empty: next batch
            pass
    return time.perf_counter() - start


def _stdlib_single(keys: list[str]) -> float:
    q: stdlib_queue.Queue = stdlib_queue.Queue()
    put, get_nowait, task_done = q.put, q.get_nowait, q.task_done
    start = time.perf_counter()
    for base in range(0, len(keys), BATCH):
        for key in keys[base : base + BATCH]:
            put(key)
        try:
            while True:
                get_nowait()
                task_done()
        except stdlib_queue.Empty:  # empty: next batch
            pass
    return time.perf_counter() - start


class _BenchController(Controller):
    """A Controller that is never started: the benchmark only takes its queue."""

    watches_optional = True

    def reconcile(self, key: str) -> None:
        return None


def _controller_queue() -> RateLimitingQueue:
    """The queue a Controller builds for itself (named after it, so with metrics, and its
    default rate limiter), taken from a real Controller so the rows follow what it builds.
    Its workers call get, then forget (a reconcile that returned None) and done."""
    return _BenchController("bench", metrics_registry=CollectorRegistry()).queue


def _controller_single(keys: list[str]) -> float:
    """A Controller's queue and worker cycle (add, get, forget, done), one thread."""
    q = _controller_queue()
    add, get, forget, done = q.add, q.get, q.forget, q.done
    start = time.perf_counter()
    for base in range(0, len(keys), BATCH):
        for key in keys[base : base + BATCH]:
            add(key)
        try:
            while True:
                item, _ = get(0)
                forget(item)
                done(item)
        except TimeoutError:  # empty: next batch
            pass
    elapsed = time.perf_counter() - start
    q.shutdown()
    return elapsed


def _controller_threads(key_sets: list[list[str]], consumers: int) -> float:
    q = _controller_queue()

    def produce(keys: list[str]) -> None:
        add = q.add
        for key in keys:
            add(key)

    def consume() -> None:
        get, forget, done = q.get, q.forget, q.done
        while True:
            item, shutting_down = get()
            if shutting_down:
                return
            forget(item)
            done(item)

    return _run_threads(key_sets, produce, consume, consumers, q.shutdown)


# -- producers and consumers --------------------------------------------------------
def _ours_threads(key_sets: list[list[str]], consumers: int) -> float:
    q = Queue()

    def produce(keys: list[str]) -> None:
        add = q.add
        for key in keys:
            add(key)

    def consume() -> None:
        get, done = q.get, q.done
        while True:
            item, shutting_down = get()
            if shutting_down:
                return
            done(item)

    return _run_threads(key_sets, produce, consume, consumers, q.shutdown)


def _stdlib_threads(key_sets: list[list[str]], consumers: int) -> float:
    q: stdlib_queue.Queue = stdlib_queue.Queue()

    def produce(keys: list[str]) -> None:
        put = q.put
        for key in keys:
            put(key)

    def consume() -> None:
        get, task_done = q.get, q.task_done
        while True:
            item = get()
            task_done()
            if item is None:
                return

    def stop() -> None:
        for _ in range(consumers):
            q.put(None)

    return _run_threads(key_sets, produce, consume, consumers, stop)


def _run_threads(
    key_sets: list[list[str]],
    produce: Callable[[list[str]], None],
    consume: Callable[[], None],
    consumers: int,
    stop: Callable[[], None],
) -> float:
    producer_threads = [
        threading.Thread(target=produce, args=(keys,), name=f"bench-producer-{i}")
        for i, keys in enumerate(key_sets)
    ]
    consumer_threads = [
        threading.Thread(target=consume, name=f"bench-consumer-{i}") for i in range(consumers)
    ]
    start = time.perf_counter()
    for thread in consumer_threads + producer_threads:
        thread.start()
    for thread in producer_threads:
        thread.join()
    stop()
    for thread in consumer_threads:
        thread.join()
    return time.perf_counter() - start


# -- rate limiting --------------------------------------------------------------------
def _rate_limited(keys: list[str]) -> float:
    q = RateLimitingQueue()
    add_rate_limited, forget = q.add_rate_limited, q.forget
    try:
        start = time.perf_counter()
        for key in keys:
            add_rate_limited(key)
            forget(key)
        return time.perf_counter() - start
    finally:
        q.shutdown()


def _plain_cycle(keys: list[str]) -> float:
    q = RateLimitingQueue()
    add, get, done = q.add, q.get, q.done
    try:
        start = time.perf_counter()
        for key in keys:
            add(key)
            item, _ = get()
            done(item)
        return time.perf_counter() - start
    finally:
        q.shutdown()


class Comparison(NamedTuple):
    """One row: medians over the repetitions, and the ratio taken per repetition."""

    ours: float  # ops/s
    baseline: float  # ops/s
    ratio: float  # median of ours / baseline (ops/s), each repetition's pair
    ratio_min: float
    ratio_max: float
    cpu_ratio: float  # median of baseline / ours CPU time (process, all threads): >1 = ours cheaper


def _timed(run: Callable[[], float]) -> tuple[float, float]:
    """(seconds the run reports, process CPU seconds of all threads around it)."""
    cpu = time.process_time()
    wall = run()
    return wall, time.process_time() - cpu


def _compare(ours: Callable[[], float], baseline: Callable[[], float], ops: int) -> Comparison:
    """Both sides REPEATS times, alternating so that each pair sees the same machine load."""
    pairs = []
    for _ in range(REPEATS):
        pairs.append((_timed(ours), _timed(baseline)))
    ratios = sorted(base_wall / our_wall for (our_wall, _), (base_wall, _) in pairs)
    return Comparison(
        ours=statistics.median(ops / our_wall for (our_wall, _), _ in pairs),
        baseline=statistics.median(ops / base_wall for _, (base_wall, _) in pairs),
        ratio=statistics.median(ratios),
        ratio_min=ratios[0],
        ratio_max=ratios[-1],
        cpu_ratio=statistics.median(base_cpu / our_cpu for (_, our_cpu), (_, base_cpu) in pairs),
    )


def main() -> None:
    rows: list[tuple[str, Comparison, str]] = []
    for duplicates in (False, True):
        tag = "10% dup adds" if duplicates else "unique keys"
        keys = _keys(ADDS, duplicates)
        row = _compare(lambda: _ours_single(keys), lambda: _stdlib_single(keys), ADDS)
        rows.append((f"one thread, {tag}", row, "queue.Queue"))
        for workers in (1, 2):
            per = ADDS // workers
            key_sets = [_keys(per, duplicates, offset=w * per) for w in range(workers)]
            row = _compare(
                lambda: _ours_threads(key_sets, workers),
                lambda: _stdlib_threads(key_sets, workers),
                per * workers,
            )
            rows.append(
                (f"{workers} producer(s) / {workers} consumer(s), {tag}", row, "queue.Queue")
            )
    ring = [f"ns/obj-{i}" for i in range(1000)] * (ADDS // 1000)
    row = _compare(lambda: _rate_limited(ring), lambda: _plain_cycle(ring), len(ring))
    rows.append(("add_rate_limited + forget (default limiter)", row, "add+get+done"))
    keys = _keys(ADDS // 2, False)
    row = _compare(lambda: _ours_single(keys, named=True), lambda: _ours_single(keys), ADDS // 2)
    rows.append(("one thread, named queue (Prometheus metrics on)", row, "unnamed (off)"))

    keys = _keys(ADDS, False)
    row = _compare(lambda: _controller_single(keys), lambda: _stdlib_single(keys), ADDS)
    rows.append(("Controller's queue (named, metrics, forget), one thread", row, "queue.Queue"))
    row = _compare(lambda: _controller_threads([keys], 1), lambda: _stdlib_threads([keys], 1), ADDS)
    rows.append(("Controller's queue (named, metrics, forget), 1P/1C", row, "queue.Queue"))
    # Ten informers feeding one controller: ten producer threads on one queue lock.
    per = ADDS // PRODUCERS
    key_sets = [_keys(per, False, offset=p * per) for p in range(PRODUCERS)]
    row = _compare(
        lambda: _controller_threads(key_sets, 1),
        lambda: _stdlib_threads(key_sets, 1),
        per * PRODUCERS,
    )
    rows.append(
        (f"Controller's queue (named, metrics, forget), {PRODUCERS}P/1C", row, "queue.Queue")
    )

    width = max(len(label) for label, _, _ in rows)
    print(
        f"{'scenario':<{width}}  {'ours (ops/s)':>13}  {'baseline (ops/s)':>16}  {'ratio (range)':>18}  "
        f"{'CPU ratio':>9}  baseline"
    )
    for label, r, baseline in rows:
        spread = f"{r.ratio:.2f}x ({r.ratio_min:.2f}-{r.ratio_max:.2f})"
        print(
            f"{label:<{width}}  {r.ours:>13,.0f}  {r.baseline:>16,.0f}  {spread:>18}  {r.cpu_ratio:>8.2f}x  {baseline}"
        )
    print(
        f"median of {REPEATS} alternating repetitions; ratio = ours / baseline ops/s, taken per repetition "
        "(range in brackets); CPU ratio = baseline / ours process CPU time (all threads)."
    )
    print(
        "For the rate-limited row, >= 0.33x means within 3x of a plain cycle; "
        "the Controller's queue rows aim at >= 1.0x queue.Queue."
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "workqueue.json").write_text(
        json.dumps(
            {
                "repeats": REPEATS,
                "rows": [
                    {"label": label, "baseline_label": baseline, **r._asdict()}
                    for label, r, baseline in rows
                ],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
