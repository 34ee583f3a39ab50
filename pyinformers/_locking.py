"""Taking a contended lock without starting a lock convoy under the GIL.

A thread that blocks in ``Lock.acquire()`` waits with the GIL released. When
the lock is freed the kernel hands it to that thread while it is still asleep,
and the thread then holds the lock while it waits for the GIL. Any thread that
now wants the lock blocks in turn, and from then on every acquisition costs two
context switches: a *lock convoy*, which lasts as long as two or more threads
keep wanting the lock. Ten reflector threads adding keys to one controller's
queue formed one: 75% of the lock's acquisitions were contended, two context
switches per event, and the ten informers reached 0.7x the throughput of one.

:func:`acquire_contended` breaks the cycle at its source: it never sleeps on
the lock while a holder waits for the GIL. It hands the GIL over
(``time.sleep(0)``) and tries again without blocking, so the holder, which is
almost always waiting for the GIL, runs, finishes its short critical section
and frees the lock. Only after :data:`YIELDS` failed tries (a holder that is
really slow, or preempted by the kernel) does it block like ``acquire()``.

Use it only for locks whose holders never block while holding them (the work
queue's, the cache store's): there a failed try means "the holder is between
two bytecodes", and a yield is the cheapest way to let it finish. The pattern,
which keeps the uncontended path as cheap as a bare ``acquire()``::

    if not lock.acquire(False):
        acquire_contended(lock)
    try:
        ...
    finally:
        lock.release()

This module is internal plumbing at the bottom of the package's layers: it
imports nothing of pyinformers, and anything may import it.

Thread-safety: stateless; any thread.
"""

from __future__ import annotations

from time import sleep as _yield_gil_for
from typing import Any

__all__ = ["YIELDS", "acquire_contended"]

#: Tries (each after handing the GIL over) before a contended acquire blocks.
YIELDS = 200


def acquire_contended(lock: Any) -> None:
    """Acquire ``lock``, which a non-blocking ``acquire(False)`` just failed to take (see the module)."""
    for _ in range(YIELDS):
        _yield_gil_for(0)
        if lock.acquire(False):
            return
    lock.acquire()
