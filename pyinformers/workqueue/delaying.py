"""The delaying queue: :class:`Queue` plus ``add_after(item, delay)``.

This module owns :class:`DelayingQueue` (client-go's ``delaying_queue.go``).
Items added with a delay wait in a heap ordered by ready time; one daemon
thread, ``pyinformers-workqueue-delay-<name>``, sleeps on the queue's clock
until the earliest one is due and then adds it to the queue. An item waiting
twice keeps its earliest ready time; a zero or negative delay adds at once.

Threading: the waiting heap has its own lock, separate from the queue's, so
``add``/``get``/``done`` never contend with ``add_after``. The delay thread
never holds its lock while calling :meth:`Queue.add`, so the only nesting is
queue lock -> delay lock (in ``repr``). The thread starts with the first
positive delay and stops promptly on :meth:`shutdown` or
:meth:`shutdown_with_drain`; items still waiting then are dropped.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from typing import Any, Optional

from pyinformers.clock import Clock
from pyinformers.workqueue._time import now_function
from pyinformers.workqueue.queue import Queue

__all__ = ["DelayingQueue"]

#: How long shutdown waits for the delay thread to exit (it exits at once when woken).
_JOIN_TIMEOUT = 5.0


class DelayingQueue(Queue):
    """A :class:`Queue` whose items can be added after a delay.

    Once ``add_after`` has started the delay thread, the thread keeps the
    queue alive until :meth:`shutdown` (or :meth:`shutdown_with_drain`) is
    called: always shut a delaying queue down when done with it.

    Thread-safety: all methods may be called concurrently from any thread.
    """

    def __init__(
        self,
        name: Optional[str] = None,
        *,
        clock: Optional[Clock] = None,
        metrics_registry: Any = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_registry=metrics_registry)
        self._now = now_function(self._clock)
        self._delay_lock = threading.Lock()
        # The delay thread waits here for the next ready time or a new earlier entry.
        self._delay_cond = threading.Condition(self._delay_lock)
        # Entries (ready_at, seq, item), a min-heap. Stale entries (whose seq
        # is no longer _waiting_for[item][1]) are skipped when popped.
        self._heap: list[tuple[float, int, Hashable]] = []
        # item -> (ready_at, seq) of its live heap entry. Invariant: each item
        # waits once, with the earliest ready time it was given; an item is in
        # _waiting_for iff it has exactly one live entry in _heap.
        self._waiting_for: dict[Hashable, tuple[float, int]] = {}
        self._seq = itertools.count()
        self._delay_thread: Optional[threading.Thread] = None
        # Set once by shutdown; the delay thread exits when it sees it.
        self._delay_stopped = False

    def add_after(self, item: Hashable, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds of the queue's clock have passed.

        A zero or negative delay adds at once. If the item is already waiting,
        it keeps the earlier of its two ready times. Ignored once the queue is
        shutting down.
        """
        if self._shutting_down:
            return
        if self._metrics is not None:
            with self._lock:  # the recorder's counts are guarded by the queue lock
                self._metrics.retry()
        if delay <= 0:
            self.add(item)
            return
        with self._delay_lock:
            if self._delay_stopped:
                return
            ready_at = self._now() + delay
            current = self._waiting_for.get(item)
            if current is not None and current[0] <= ready_at:
                return
            seq = next(self._seq)
            self._waiting_for[item] = (ready_at, seq)
            heap = self._heap
            heapq.heappush(heap, (ready_at, seq, item))
            if self._delay_thread is None:
                self._start_delay_thread()
            elif heap[0][1] == seq:  # the new entry is now the earliest: re-arm the wait
                self._delay_cond.notify()

    def waiting_count(self) -> int:
        """How many distinct items wait for their ready time."""
        return len(self._waiting_for)

    # -- the delay thread ---------------------------------------------------------
    def _start_delay_thread(self) -> None:
        label = self._name if self._name is not None else f"unnamed-{id(self):x}"
        thread = threading.Thread(
            target=self._delay_loop, name=f"pyinformers-workqueue-delay-{label}", daemon=True
        )
        self._delay_thread = thread
        thread.start()

    def _delay_loop(self) -> None:
        clock = self._clock
        heap = self._heap
        waiting_for = self._waiting_for
        cond = self._delay_cond
        while True:
            ready: list[Hashable] = []
            with cond:
                while not self._delay_stopped:
                    # Drop superseded entries at the head so the wait is armed
                    # for a live ready time only.
                    while heap and waiting_for.get(heap[0][2], (0.0, -1))[1] != heap[0][1]:
                        heapq.heappop(heap)
                    if heap and heap[0][0] <= clock.now():
                        break
                    if heap:
                        clock.wait(cond, heap[0][0] - clock.now())
                    else:
                        cond.wait()
                if self._delay_stopped:
                    return
                now = clock.now()
                while heap and heap[0][0] <= now:
                    _, seq, item = heapq.heappop(heap)
                    live = waiting_for.get(item)
                    if live is not None and live[1] == seq:
                        del waiting_for[item]
                        ready.append(item)
            for item in ready:  # outside the delay lock: add() takes the queue lock
                self.add(item)

    def _stop_background(self) -> None:
        with self._delay_cond:
            self._delay_stopped = True
            thread = self._delay_thread
            self._heap.clear()
            self._waiting_for.clear()
            self._delay_cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(_JOIN_TIMEOUT)

    def _state_fields(self) -> list[str]:
        fields = super()._state_fields()
        with self._delay_lock:
            fields.append(f"waiting={len(self._waiting_for)}")
        return fields
