"""The delaying queue: :class:`Queue` plus ``add_after(item, delay)``.

This module owns :class:`DelayingQueue` (client-go's ``delaying_queue.go``).
Items added with a delay wait in a heap ordered by ready time, then by the
order they were given; one timer of the queue's clock is armed for the
earliest of them. When it fires, the items now due are added to the queue
in heap order and the timer is re-armed for the next one. An item waiting
twice keeps its earliest ready time; a zero or negative delay adds at once.

No thread of its own: on the real clock the timer runs on the process's one
timer thread (``pyinformers-clock-timers``), whatever the number of queues
and waiting items; on a :class:`~pyinformers.clock.FakeClock` it runs inside
``step()``, so the items due are queued when ``step`` returns.

Threading: the waiting heap has its own lock, separate from the queue's, so
``add``/``get``/``done`` never contend with ``add_after``. The timer callback
never holds that lock while calling :meth:`Queue.add`, so the lock order is
queue lock -> delay lock (in ``repr``) and delay lock -> the clock's lock
(arming and cancelling the timer); a clock never calls a timer holding its
own lock. :meth:`shutdown` and :meth:`shutdown_with_drain` cancel the timer
and drop the items still waiting, at once.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from typing import Any

from pyinformers.clock import Clock, TimerHandle
from pyinformers.workqueue._queue import Queue
from pyinformers.workqueue._time import now_function

__all__ = ["DelayingQueue"]


class DelayingQueue(Queue):
    """A :class:`Queue` whose items can be added after a delay.

    Thread-safety: all methods may be called concurrently from any thread.
    Shutting the queue down cancels its timer; a queue that is dropped with
    items still waiting keeps its timer (and so itself) alive until the
    timer has fired.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        clock: Clock | None = None,
        metrics_registry: Any = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_registry=metrics_registry)
        self._now = now_function(self._clock)
        # _delay_lock guards everything below.
        self._delay_lock = threading.Lock()
        # Entries (ready_at, seq, item), a min-heap: ready time, then the order given.
        # Stale entries (whose seq is no longer _waiting_for[item][1]) are skipped when popped.
        self._heap: list[tuple[float, int, Hashable]] = []
        # item -> (ready_at, seq) of its live heap entry. Invariant: each item
        # waits once, with the earliest ready time it was given; an item is in
        # _waiting_for iff it has exactly one live entry in _heap.
        self._waiting_for: dict[Hashable, tuple[float, int]] = {}
        self._seq = itertools.count()
        # The armed timer and the ready time it is armed for. Invariant: while
        # _waiting_for is not empty and the queue runs, a timer is armed for a
        # time no later than the earliest live ready time. _timer_token tells
        # the armed timer's callback from one that was replaced.
        self._timer: TimerHandle | None = None
        self._timer_at = 0.0
        self._timer_token: object | None = None
        # Set once by shutdown: nothing waits, no timer is armed from then on.
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
            heapq.heappush(self._heap, (ready_at, seq, item))
            if self._timer is None or ready_at < self._timer_at:
                self._arm_locked(ready_at, delay)

    def waiting_count(self) -> int:
        """How many distinct items wait for their ready time."""
        return len(self._waiting_for)

    # -- the timer ----------------------------------------------------------------
    def _arm_locked(self, ready_at: float, delay: float) -> None:
        """Arm the one timer for ``ready_at`` (``delay`` from now), replacing the armed one (delay lock held)."""
        if self._timer is not None:
            self._timer.cancel()
        token = object()
        self._timer_token = token
        self._timer_at = ready_at
        # A callback may run before call_later returns (on the real clock's thread);
        # it then waits for the delay lock, which this thread holds until _timer is set.
        self._timer = self._clock.call_later(delay, lambda: self._on_timer(token))

    def _on_timer(self, token: object) -> None:
        """Move the items now due to the queue, in heap order; re-arm for the next one."""
        ready: list[Hashable] = []
        with self._delay_lock:
            if self._timer_token is token:
                self._timer = self._timer_token = None
            if self._delay_stopped:
                return
            heap = self._heap
            waiting_for = self._waiting_for
            now = self._now()
            while heap:
                ready_at, seq, item = heap[0]
                live = waiting_for.get(item)
                if live is None or live[1] != seq:  # superseded by an earlier ready time
                    heapq.heappop(heap)
                elif ready_at <= now:
                    heapq.heappop(heap)
                    del waiting_for[item]
                    ready.append(item)
                else:
                    if self._timer is None or ready_at < self._timer_at:
                        self._arm_locked(ready_at, ready_at - now)
                    break
        for item in ready:  # outside the delay lock: add() takes the queue lock
            self.add(item)

    def _stop_background(self) -> None:
        with self._delay_lock:
            self._delay_stopped = True
            timer, self._timer, self._timer_token = self._timer, None, None
            self._heap.clear()
            self._waiting_for.clear()
        if timer is not None:
            timer.cancel()

    def _state_fields(self) -> list[str]:
        fields = super()._state_fields()
        with self._delay_lock:
            fields.append(f"waiting={len(self._waiting_for)}")
        return fields
