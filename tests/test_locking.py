"""A contended lock (work queue, store) is taken by handing the GIL over, never by sleeping on the lock first."""

from __future__ import annotations

import threading

from pyinformers import _locking as locking
from pyinformers._locking import YIELDS, acquire_contended
from pyinformers.testing import eventually
from pyinformers.workqueue import Queue


def test_a_contended_acquire_returns_holding_the_lock_once_a_busy_holder_lets_go():
    lock = threading.Lock()
    held = threading.Event()
    let_go = []

    def holder() -> None:
        with lock:
            held.set()
            while not let_go:  # Python work under the lock: the holder needs the GIL to finish
                pass

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(5)
    assert not lock.acquire(False)  # held until let_go, whatever the scheduling
    let_go.append(True)
    acquire_contended(lock)
    thread.join(5)
    assert not thread.is_alive() and lock.locked()  # ours now: the holder finished and let go
    lock.release()


def test_a_holder_that_keeps_the_lock_makes_the_acquire_block_after_a_bounded_number_of_yields(
    monkeypatch,
):
    yields = []
    monkeypatch.setattr(locking, "_yield_gil_for", lambda seconds: yields.append(seconds))
    lock = threading.Lock()
    lock.acquire()  # held by a thread that is not running Python: yielding cannot free it
    acquired = threading.Event()

    def acquirer() -> None:
        acquire_contended(lock)
        acquired.set()

    thread = threading.Thread(target=acquirer)
    thread.start()
    eventually(lambda: len(yields) == YIELDS, what=f"{YIELDS} yields")
    assert not acquired.is_set()
    lock.release()
    thread.join(5)
    assert acquired.is_set() and len(yields) == YIELDS  # it blocked, and did not spin on


def test_ten_producers_and_a_worker_lose_nothing_and_process_no_item_twice_at_once():
    queue = Queue("contention-test", metrics_registry=False)
    producers, per_producer = 10, 2_000
    processing: set = set()
    seen: set = set()
    overlap = []

    def produce(p: int) -> None:
        for i in range(per_producer):
            queue.add((p, i % 50))  # few distinct keys: lots of deduplication under contention

    def work() -> None:
        while True:
            item, stop = queue.get()
            if stop:
                return
            if item in processing:
                overlap.append(item)
            processing.add(item)
            seen.add(item)
            processing.discard(item)
            queue.done(item)

    worker = threading.Thread(target=work)
    worker.start()
    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    queue.shutdown_with_drain(30)
    worker.join(30)
    assert not overlap
    assert seen == {(p, k) for p in range(producers) for k in range(50)}
    assert len(queue) == 0 and queue.processing_count() == 0
