"""Producers and workers hammering one queue, bounded in time.

Checks, under real thread interleavings:

* no key is ever processed by two workers at once;
* every key is processed at least once after its last add (the queue never
  loses an add that arrives while the key waits or is being processed);
* ``shutdown_with_drain`` returns True once processing is empty, and the
  workers then see ``(None, True)``.
"""

from __future__ import annotations

import itertools
import random
import sys
import threading

import pytest

from pyinformers.clock import FakeClock
from pyinformers.testing import eventually
from pyinformers.workqueue import Queue, RateLimitingQueue

PRODUCERS = 3
WORKERS = 3
ROUNDS = 10
ADDS_PER_PRODUCER = 200  # per round
KEYS = [f"ns/key-{i}" for i in range(8)]
BOUND = 30.0  # real seconds any join may take before the test fails


class Recorder:
    """What the threads observed, stamped with one global, atomic counter."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stamp = itertools.count()  # next() is atomic in CPython
        self.active: set = set()
        self.overlaps: list = []
        self.last_add: dict = {}  # key -> stamp taken just before its last add
        self.last_get: dict = {}  # key -> stamp taken just after its last get returned
        self.processed = 0


def producer(q: Queue, rec: Recorder, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(ADDS_PER_PRODUCER):
        key = rng.choice(KEYS)
        stamp = next(rec.stamp)
        with rec.lock:
            rec.last_add[key] = max(rec.last_add.get(key, -1), stamp)
        q.add(key)
        sum(range(300))  # pace the adds so that many land while their key is processed


def worker(q: Queue, rec: Recorder) -> None:
    while True:
        key, shutting_down = q.get(timeout=BOUND)
        if shutting_down:
            return
        stamp = next(rec.stamp)
        with rec.lock:
            if key in rec.active:
                rec.overlaps.append(key)
            rec.active.add(key)
            rec.last_get[key] = max(rec.last_get.get(key, -1), stamp)
            rec.processed += 1
        # A little work, so that adds arrive while keys are being processed.
        sum(range(1000))
        with rec.lock:
            rec.active.discard(key)
        q.done(key)


@pytest.fixture(autouse=True)
def fine_grained_switching():
    """Switch threads every 20 us instead of 5 ms, so interleavings happen mid-operation."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(2e-5)
    yield
    sys.setswitchinterval(previous)


def wait_until_idle(q: Queue) -> None:
    """Block (real time, bounded) until nothing is queued or being processed."""

    def idle() -> bool:
        # One snapshot under the queue's lock: reading len() and processing_count() one after the
        # other can miss a key that done() moves from processing back to the queue in between.
        with q._lock:
            return not (len(q._queue) or len(q._processing))

    eventually(idle, timeout=BOUND, what=f"the queue to go idle: {q!r}")


@pytest.mark.parametrize("queue_type", [Queue, RateLimitingQueue])
def test_many_producers_and_workers_never_share_a_key_and_lose_no_add(queue_type):
    q = queue_type()
    rec = Recorder()
    workers = [
        threading.Thread(target=worker, args=(q, rec), name=f"test-worker-{i}", daemon=True)
        for i in range(WORKERS)
    ]
    for thread in workers:
        thread.start()
    # Rounds: each key's last add in a round is a fresh chance to catch a lost add.
    for round_ in range(ROUNDS):
        rec.last_add.clear()
        producers = [
            threading.Thread(
                target=producer,
                args=(q, rec, round_ * PRODUCERS + i),
                name=f"test-producer-{i}",
                daemon=True,
            )
            for i in range(PRODUCERS)
        ]
        for thread in producers:
            thread.start()
        for thread in producers:
            thread.join(BOUND)
            assert not thread.is_alive(), "a producer did not finish in time"
        wait_until_idle(q)
        # A get stamped after an add's stamp returned after that add began; the
        # queue must hand out every key once more after its last add.
        lost = [key for key, added in rec.last_add.items() if rec.last_get.get(key, -1) < added]
        assert lost == [], f"round {round_}: keys not processed after their last add: {lost}"

    assert q.shutdown_with_drain(timeout=BOUND) is True
    for thread in workers:
        thread.join(BOUND)
        assert not thread.is_alive(), "a worker did not see the shutdown"
    assert rec.overlaps == [], f"keys processed by two workers at once: {rec.overlaps[:5]}"
    assert q.processing_count() == 0 and len(q) == 0
    assert 0 < rec.processed <= ROUNDS * PRODUCERS * ADDS_PER_PRODUCER


def test_shutdown_with_drain_waits_for_busy_workers_to_finish():
    clock = FakeClock()  # only so the test can see the drain waiting
    q = Queue(clock=clock)
    release = threading.Event()
    got = threading.Barrier(WORKERS + 1)
    finished: list = []

    def slow_worker() -> None:
        key, _ = q.get(timeout=BOUND)
        got.wait(BOUND)
        release.wait(BOUND)
        finished.append(key)
        q.done(key)

    for i in range(WORKERS):
        q.add(f"key-{i}")
    threads = [
        threading.Thread(target=slow_worker, name=f"test-slow-{i}", daemon=True)
        for i in range(WORKERS)
    ]
    for thread in threads:
        thread.start()
    got.wait(BOUND)  # every worker holds a key

    result: list = []

    def drain() -> None:
        drained = q.shutdown_with_drain(timeout=BOUND)
        result.append((drained, len(finished)))

    drainer = threading.Thread(target=drain, name="test-drain", daemon=True)
    drainer.start()
    clock.block_until_waiters(1)  # the drain is blocked on busy workers
    assert result == []
    release.set()
    drainer.join(BOUND)
    assert result == [(True, WORKERS)]  # it returned only after every worker was done
    assert sorted(finished) == [f"key-{i}" for i in range(WORKERS)]
    for thread in threads:
        thread.join(BOUND)


def test_metrics_add_up_under_concurrent_work_and_scrapes():
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    q = Queue("hammered", metrics_registry=registry)
    rec = Recorder()
    stop_scraping = threading.Event()
    scrapes: list = []

    def scrape() -> None:
        while not stop_scraping.is_set():
            scrapes.append(len(generate_latest(registry)))

    threads = [
        threading.Thread(target=worker, args=(q, rec), name=f"test-worker-{i}", daemon=True)
        for i in range(2)
    ]
    threads += [
        threading.Thread(target=producer, args=(q, rec, i), name=f"test-producer-{i}", daemon=True)
        for i in range(2)
    ]
    scraper = threading.Thread(target=scrape, name="test-scraper", daemon=True)
    for thread in threads + [scraper]:
        thread.start()
    for thread in threads[2:]:
        thread.join(BOUND)
    wait_until_idle(q)
    assert q.shutdown_with_drain(timeout=BOUND) is True
    for thread in threads[:2]:
        thread.join(BOUND)
    stop_scraping.set()
    scraper.join(BOUND)

    def value(metric: str) -> float | None:
        return registry.get_sample_value(metric, {"name": "hammered"})

    # Every add that made a key waiting led to exactly one get and one done.
    assert scrapes, "the scraper never ran"
    assert value("workqueue_adds_total") == rec.processed
    assert value("workqueue_queue_duration_seconds_count") == rec.processed
    assert value("workqueue_work_duration_seconds_count") == rec.processed
    assert value("workqueue_depth") == 0
    assert value("workqueue_unfinished_work_seconds") == 0
