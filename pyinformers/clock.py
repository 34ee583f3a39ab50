"""Time, injected: the :class:`Clock` every timed component of pyinformers takes.

Queues, reflectors, rate limiters, leader electors and recorders never call
``time.monotonic`` or ``Condition.wait(timeout)`` directly; they ask a clock.
Production code uses :data:`REAL_CLOCK`. Tests use :class:`FakeClock`, whose
time only moves when the test calls :meth:`FakeClock.step`, so no test has to
sleep and no test depends on how fast the machine is.

The contract of a clock is small:

* :meth:`Clock.now` -- monotonic seconds (never goes backwards);
* :meth:`Clock.time` -- wall-clock seconds since the epoch, for timestamps
  written to the API server;
* :meth:`Clock.wait` -- ``Condition.wait(timeout)`` measured on this clock;
* :meth:`Clock.wait_event` -- ``Event.wait(timeout)`` measured on this clock;
* :meth:`Clock.sleep` -- a plain sleep measured on this clock;
* :meth:`Clock.call_later` -- a one-shot timer: call a function once, later.

Waits may wake early (spuriously or because they were notified); callers loop
on their own predicate and recompute the remaining time from :meth:`now`,
exactly as they would with :class:`threading.Condition`.

Waits or timers. A component that only needs to *do something at a time*
(move a delayed item to its queue, close a silent watch, retry a write)
takes a timer rather than a thread that waits: the real clock runs every
timer of the process on one thread, ``pyinformers-clock-timers``, and the
fake clock runs them inside :meth:`FakeClock.step`, so a test that steps time
finds the work done when ``step`` returns. A thread that must block until a
time (a backoff inside a loop) waits on the clock instead; a fake clock
counts those threads as *waiters* and its timers apart, so
:meth:`FakeClock.block_until_waiters` and :meth:`FakeClock.block_until_timers`
each mean one thing.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time as _time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

_log = logging.getLogger("pyinformers.clock")

__all__ = ["Clock", "RealClock", "FakeClock", "REAL_CLOCK", "TimerHandle"]


@runtime_checkable
class TimerHandle(Protocol):
    """What :meth:`Clock.call_later` returns."""

    def cancel(self) -> bool:
        """Stop the timer if it has not fired; True when this call stopped it."""


@runtime_checkable
class Clock(Protocol):
    """What a timed component needs from time. Implementations are thread-safe."""

    def now(self) -> float:
        """Monotonic seconds. Only differences between two values mean anything."""

    def time(self) -> float:
        """Wall-clock seconds since the Unix epoch (for timestamps, not for timing)."""

    def wait(self, cond: threading.Condition, timeout: float | None) -> bool:
        """Wait on ``cond`` (which the caller holds) for at most ``timeout`` seconds.

        Returns False when the timeout elapsed, True when woken before it
        (by a notify, or spuriously). ``timeout=None`` waits for a notify.
        """

    def wait_event(self, event: threading.Event, timeout: float | None) -> bool:
        """Wait until ``event`` is set or ``timeout`` elapses; return ``event.is_set()``."""

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` of this clock's time."""

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        """Call ``callback()`` once, ``delay`` seconds of this clock's time from now.

        Timers fire in deadline order, timers with the same deadline in the
        order they were made. The real clock calls them on its one timer
        thread; the fake clock from :meth:`FakeClock.step`, on the stepping
        thread. Either way a callback runs without any lock of the clock
        held (it may make or cancel timers), must be quick (it delays the
        timers behind it) and must not raise (an exception is logged and
        dropped). It may run before ``call_later`` has returned the handle.
        """


class RealClock:
    """The clock of the machine: :func:`time.monotonic`, real waits, one timer thread."""

    def now(self) -> float:
        return _time.monotonic()

    def time(self) -> float:
        return _time.time()

    def wait(self, cond: threading.Condition, timeout: float | None) -> bool:
        if timeout is not None and timeout <= 0:
            return False
        return cond.wait(timeout)

    def wait_event(self, event: threading.Event, timeout: float | None) -> bool:
        if timeout is not None and timeout <= 0:
            return event.is_set()
        return event.wait(timeout)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            _time.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        """Schedule ``callback`` on the process's timer thread (see :class:`_TimerService`)."""
        return _TIMERS.schedule(max(0.0, delay), callback)

    def timer_count(self) -> int:
        """How many timers of the real clocks (all share one thread) have neither fired nor been cancelled."""
        return _TIMERS.pending()

    def __repr__(self) -> str:
        return "<RealClock>"


def _call(callback: Callable[[], Any]) -> None:
    try:
        callback()
    except Exception:  # a timer has no caller to raise to
        _log.exception("timer callback %r failed", callback)


# A timer's life: pending -> fired, or pending -> cancelled; never anything else.
_PENDING, _FIRED, _CANCELLED = 0, 1, 2


class _Timer:
    """A timer of either clock: what :meth:`Clock.call_later` returns."""

    __slots__ = ("_cancel", "deadline", "callback", "state")

    def __init__(
        self, deadline: float, callback: Callable[[], Any], cancel: Callable[[_Timer], bool]
    ) -> None:
        self._cancel = cancel  # the owning clock's cancel (it takes the clock's lock)
        self.deadline = deadline  # on the owning clock's time
        self.callback: Callable[[], Any] | None = callback  # None once fired or cancelled
        self.state = _PENDING

    def cancel(self) -> bool:
        return self._cancel(self)


class _TimerHeap:
    """Pending timers in ``(deadline, order made)`` order; both clocks keep theirs in one.

    Not thread-safe: the owning clock's lock guards it. Invariants: ``_heap``
    holds ``(deadline, seq, timer)`` for every pending timer, and possibly
    cancelled ones not yet dropped (skipped when they reach the head, and
    dropped all at once when they are the majority of a large heap);
    ``pending`` counts the pending ones.
    """

    _COMPACT_AT = 64

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()
        self.pending = 0

    def push(self, timer: _Timer) -> bool:
        """Add a pending timer; True when it is now the earliest."""
        heapq.heappush(self._heap, (timer.deadline, next(self._seq), timer))
        self.pending += 1
        return self._heap[0][2] is timer

    def cancel(self, timer: _Timer) -> bool:
        """Mark ``timer`` cancelled if it is pending; True when this call did."""
        if timer.state != _PENDING:
            return False
        timer.state = _CANCELLED
        timer.callback = None
        self.pending -= 1
        if len(self._heap) >= self._COMPACT_AT and self.pending * 2 < len(self._heap):
            self._heap = [entry for entry in self._heap if entry[2].state == _PENDING]
            heapq.heapify(self._heap)
        return True

    def earliest(self) -> _Timer | None:
        """The pending timer due first, or None."""
        heap = self._heap
        while heap and heap[0][2].state != _PENDING:
            heapq.heappop(heap)
        return heap[0][2] if heap else None

    def pop_due(self, until: float) -> Callable[[], Any] | None:
        """Fire the earliest timer if its deadline is ``<= until``: return its callback (or None)."""
        timer = self.earliest()
        if timer is None or timer.deadline > until:
            return None
        heapq.heappop(self._heap)
        timer.state = _FIRED
        self.pending -= 1
        callback, timer.callback = timer.callback, None
        return callback


class _TimerService:
    """The real clock's timers: one heap, one daemon thread (``pyinformers-clock-timers``).

    However many timers are pending (a delaying queue holds one, a watch one,
    a recorder retry one), one thread serves them all: it sleeps until the
    earliest deadline, pops the timer and calls it without the lock. The
    thread starts with the first timer and ends after :attr:`idle_linger`
    seconds with nothing pending, so an idle process keeps no thread.

    Invariants, under ``_cond``: ``_timers`` holds every pending timer (see
    :class:`_TimerHeap`); ``_thread`` is the one thread serving it, or None
    when none runs (set to None only by that thread, as it leaves).

    Ordering: timers fire in deadline order, equal deadlines in the order
    they were made. A slow callback delays the timers behind it, never
    reorders them.
    """

    idle_linger = 2.0

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._timers = _TimerHeap()
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, callback: Callable[[], Any]) -> _Timer:
        timer = _Timer(_time.monotonic() + delay, callback, self.cancel)
        with self._cond:
            earliest = self._timers.push(timer)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="pyinformers-clock-timers", daemon=True
                )
                self._thread.start()
            elif earliest:  # earlier than what the thread sleeps for
                self._cond.notify()
        return timer

    def cancel(self, timer: _Timer) -> bool:
        with self._cond:
            return self._timers.cancel(timer)

    def pending(self) -> int:
        with self._cond:
            return self._timers.pending

    def _serve(self) -> None:
        cond = self._cond
        idle_since: float | None = None
        while True:
            with cond:
                while True:
                    now = _time.monotonic()
                    callback = self._timers.pop_due(now)
                    if callback is not None:
                        idle_since = None
                        break
                    timer = self._timers.earliest()
                    if timer is not None:
                        idle_since = None
                        cond.wait(timer.deadline - now)
                        continue
                    if idle_since is None:
                        idle_since = now
                    elif now - idle_since >= self.idle_linger:
                        self._thread = None
                        return
                    cond.wait(self.idle_linger - (now - idle_since))
            _call(callback)


_TIMERS = _TimerService()
if hasattr(
    os, "register_at_fork"
):  # a forked child has no timer thread: start afresh (parent's timers dropped)
    os.register_at_fork(after_in_child=_TIMERS._reset)

#: The clock components use when none is given.
REAL_CLOCK = RealClock()


class _Waiter:
    """One thread blocked on a :class:`FakeClock` until ``deadline``."""

    __slots__ = ("deadline", "wake", "fired")

    def __init__(self, deadline: float, wake: Callable[[], None]) -> None:
        self.deadline = deadline
        self.wake = wake  # called (without the clock's lock) when time passes deadline
        self.fired = False


class FakeClock:
    """A clock whose time moves only when :meth:`step` (or :meth:`set`) is called.

    Two things can wait on a fake clock, and it keeps them apart:

    * **waiters** -- threads blocked in :meth:`wait`, :meth:`wait_event` or
      :meth:`sleep` with a timeout. ``step`` wakes the ones whose deadline has
      come; they then run on their own threads. :meth:`waiter_count`,
      :meth:`next_deadline` and :meth:`block_until_waiters` count only them.
    * **timers** -- callbacks from :meth:`call_later`. ``step`` runs the ones
      whose deadline has come itself, on the stepping thread, before it
      returns: after ``clock.step(30)`` a delaying queue's item due in 30 s is
      in the queue, with no thread to wait for. :meth:`timer_count`,
      :meth:`next_timer_deadline` and :meth:`block_until_timers` count only them.

    Stepping walks through the deadlines it passes: a timer runs with
    :meth:`now` equal to its own deadline, timers in ``(deadline, creation)``
    order, and a timer that a callback makes for a time still inside the step
    runs in the same step. ``step(s)`` therefore fires the same timers, in the
    same order, as ``s`` split into smaller steps. A timer made with a zero
    or negative delay fires at the next ``step`` (``step(0)`` included), never
    inside ``call_later``. When ``step`` returns, :meth:`now` is the target.

    Tests that need to know a component has reached its wait call
    :meth:`block_until_waiters` instead of polling; a component that arms
    timers from its own thread is waited for with :meth:`block_until_timers`.

    Thread-safety: every method may be called from any thread. ``step`` must
    not be called while holding a lock that a waiter's wake-up or a timer's
    callback takes (the queue's, the component's).

    ``wait_event`` cannot be woken by ``Event.set`` through the clock, so it
    watches the event in real-time slices of :attr:`event_slice` seconds while
    its deadline is measured on fake time. It is the only real-time wait here,
    and it never decides a timeout: only :meth:`step` does.
    """

    event_slice = 0.005

    def __init__(self, start: float = 1000.0, *, wall_start: float = 1_767_225_600.0) -> None:
        # wall_start is 2026-01-01T00:00:00Z: deterministic timestamps in tests.
        self._lock = threading.Condition(threading.Lock())
        self._now = float(start)
        self._wall_offset = float(wall_start) - float(start)
        # invariant: every waiter in _heap has fired == False
        self._heap: list[tuple[float, int, _Waiter]] = []
        self._timers = _TimerHeap()
        self._seq = itertools.count()

    # -- reading time -----------------------------------------------------------------
    def now(self) -> float:
        with self._lock:
            return self._now

    def time(self) -> float:
        with self._lock:
            return self._now + self._wall_offset

    # -- moving time ------------------------------------------------------------------
    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` (>= 0): wake the waiters and run the timers now due."""
        if seconds < 0:
            raise ValueError(f"a clock cannot step backwards (step({seconds!r}))")
        with self._lock:
            target = self._now + seconds
        self.set(target)

    def set(self, now: float) -> None:
        """Move time forward to ``now``: wake the waiters and run the timers now due, in deadline order."""
        with self._lock:
            if now < self._now:
                raise ValueError(f"a clock cannot go backwards (from {self._now} to {now})")
        while True:
            with self._lock:
                timer = self._timers.earliest()
                if timer is not None and timer.deadline > now:
                    timer = None
                # Time walks to the next timer's deadline (or the target), never backwards.
                horizon = max(self._now, timer.deadline if timer is not None else now)
                callback = self._timers.pop_due(horizon) if timer is not None else None
                self._now = horizon
                due = []
                while self._heap and self._heap[0][0] <= horizon:
                    _, _, waiter = heapq.heappop(self._heap)
                    waiter.fired = True
                    due.append(waiter)
                self._lock.notify_all()
            for waiter in due:  # without our lock: a waiter holds its own lock, then takes ours
                waiter.wake()
            if callback is None:
                return
            _call(callback)

    # -- observing waiters and timers -------------------------------------------------
    def waiter_count(self) -> int:
        """How many threads are blocked on this clock with a deadline (timers not counted)."""
        with self._lock:
            return len(self._heap)

    def next_deadline(self) -> float | None:
        """The earliest deadline any waiting thread has, or None (timers not counted)."""
        with self._lock:
            return self._heap[0][0] if self._heap else None

    def timer_count(self) -> int:
        """How many timers from :meth:`call_later` have neither fired nor been cancelled."""
        with self._lock:
            return self._timers.pending

    def next_timer_deadline(self) -> float | None:
        """The earliest deadline of a pending timer, or None."""
        with self._lock:
            timer = self._timers.earliest()
            return timer.deadline if timer is not None else None

    def block_until_waiters(self, count: int = 1, timeout: float = 10.0) -> None:
        """Block (in real time) until at least ``count`` threads wait with a deadline.

        Raises :class:`TimeoutError` after ``timeout`` real seconds: a test that
        expected a component to be waiting fails loudly instead of hanging.
        """
        self._block_until(lambda: len(self._heap), count, timeout, "waiter")

    def block_until_timers(self, count: int = 1, timeout: float = 10.0) -> None:
        """Block (in real time) until at least ``count`` timers are pending.

        For a timer a component arms on its own thread (the reflector's stall
        timer, armed when a watch opens): once it is pending, ``step`` fires
        it. Raises :class:`TimeoutError` after ``timeout`` real seconds.
        """
        self._block_until(lambda: self._timers.pending, count, timeout, "timer")

    def _block_until(
        self, measure: Callable[[], int], count: int, timeout: float, what: str
    ) -> None:
        deadline = _time.monotonic() + timeout
        with self._lock:
            while measure() < count:
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"expected {count} {what}(s) on the fake clock, have {measure()}"
                    )
                self._lock.wait(remaining)

    def _register(self, timeout: float, wake: Callable[[], None]) -> _Waiter:
        with self._lock:
            waiter = _Waiter(self._now + timeout, wake)
            heapq.heappush(self._heap, (waiter.deadline, next(self._seq), waiter))
            self._lock.notify_all()
            return waiter

    def _unregister(self, waiter: _Waiter) -> bool:
        """Remove a waiter that has not fired; True when it was still pending."""
        with self._lock:
            if waiter.fired:
                return False
            waiter.fired = True
            self._heap = [entry for entry in self._heap if entry[2] is not waiter]
            heapq.heapify(self._heap)
            self._lock.notify_all()
            return True

    # -- waiting ----------------------------------------------------------------------
    def wait(self, cond: threading.Condition, timeout: float | None) -> bool:
        if timeout is None:
            return cond.wait()
        if timeout <= 0:
            return False
        # The caller holds cond, so step() cannot notify it before cond.wait() releases it.
        waiter = self._register(timeout, lambda: _notify_all(cond))
        try:
            cond.wait()
        finally:
            self._unregister(waiter)
        return self.now() < waiter.deadline  # False exactly when the deadline passed

    def wait_event(self, event: threading.Event, timeout: float | None) -> bool:
        if timeout is None:
            return event.wait()
        if timeout <= 0 or event.is_set():
            return event.is_set()
        waiter = self._register(timeout, lambda: None)
        try:
            while not waiter.fired:
                if event.wait(self.event_slice):
                    return True
        finally:
            self._unregister(waiter)
        return event.is_set()

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        cond = threading.Condition(threading.Lock())
        with cond:
            deadline = self.now() + seconds
            while self.now() < deadline:
                self.wait(cond, deadline - self.now())

    # -- timers -----------------------------------------------------------------------
    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        """Make a timer that :meth:`step` runs once time reaches ``now() + delay`` (see the class doc)."""
        with self._lock:
            timer = _Timer(self._now + max(0.0, delay), callback, self._cancel_timer)
            self._timers.push(timer)
            self._lock.notify_all()  # block_until_timers
            return timer

    def _cancel_timer(self, timer: _Timer) -> bool:
        with self._lock:
            if not self._timers.cancel(timer):
                return False
            self._lock.notify_all()
            return True

    def __repr__(self) -> str:
        return f"<FakeClock now={self.now():.3f} waiters={self.waiter_count()} timers={self.timer_count()}>"


def _notify_all(cond: threading.Condition) -> None:
    with cond:
        cond.notify_all()
