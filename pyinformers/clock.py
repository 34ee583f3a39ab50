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
* :meth:`Clock.sleep` -- a plain sleep measured on this clock.

Waits may wake early (spuriously or because they were notified); callers loop
on their own predicate and recompute the remaining time from :meth:`now`,
exactly as they would with :class:`threading.Condition`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time as _time
from typing import Any, Callable, Optional, Protocol, runtime_checkable

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

    def wait(self, cond: threading.Condition, timeout: Optional[float]) -> bool:
        """Wait on ``cond`` (which the caller holds) for at most ``timeout`` seconds.

        Returns False when the timeout elapsed, True when woken before it
        (by a notify, or spuriously). ``timeout=None`` waits for a notify.
        """

    def wait_event(self, event: threading.Event, timeout: Optional[float]) -> bool:
        """Wait until ``event`` is set or ``timeout`` elapses; return ``event.is_set()``."""

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` of this clock's time."""

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        """Call ``callback()`` once, ``delay`` seconds of this clock's time from now.

        The real clock calls it on a daemon thread; the fake clock calls it
        from :meth:`FakeClock.step` on the stepping thread, in deadline order,
        so a test steps time and the timer has fired when ``step`` returns.
        A callback must not raise (an exception is logged and dropped).
        """


class RealClock:
    """The clock of the machine: :func:`time.monotonic` and real waits."""

    def now(self) -> float:
        return _time.monotonic()

    def time(self) -> float:
        return _time.time()

    def wait(self, cond: threading.Condition, timeout: Optional[float]) -> bool:
        if timeout is not None and timeout <= 0:
            return False
        return cond.wait(timeout)

    def wait_event(self, event: threading.Event, timeout: Optional[float]) -> bool:
        if timeout is not None and timeout <= 0:
            return event.is_set()
        return event.wait(timeout)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            _time.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        return _RealTimer(max(0.0, delay), callback)

    def __repr__(self) -> str:
        return "<RealClock>"


class _RealTimer:
    """A :class:`threading.Timer` (daemon, named) whose ``cancel`` says whether it stopped it."""

    def __init__(self, delay: float, callback: Callable[[], Any]) -> None:
        self._lock = threading.Lock()
        self._state = "pending"  # -> "fired" | "cancelled", once
        self._callback = callback
        self._thread = threading.Timer(delay, self._fire)
        self._thread.name = f"pyinformers-timer-{getattr(callback, '__name__', 'callback')}"
        self._thread.daemon = True
        self._thread.start()

    def _fire(self) -> None:
        with self._lock:
            if self._state != "pending":
                return
            self._state = "fired"
        _call(self._callback)

    def cancel(self) -> bool:
        with self._lock:
            if self._state != "pending":
                return False
            self._state = "cancelled"
        self._thread.cancel()
        return True


def _call(callback: Callable[[], Any]) -> None:
    try:
        callback()
    except Exception:  # a timer has no caller to raise to
        _log.exception("timer callback %r failed", callback)


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

    Threads that wait with a timeout register a deadline with the clock; ``step``
    advances time and wakes exactly the waiters whose deadline has come, in
    deadline order. Waits without a timeout are plain waits (only a notify or
    the event wakes them).

    Tests that need to know a component has reached its wait call
    :meth:`block_until_waiters` instead of polling.

    Thread-safety: every method may be called from any thread. ``step`` must
    not be called while holding a condition that a waiter of this clock uses.

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
        # invariant: every waiter in _heap has fired == False and deadline > _now
        self._heap: list[tuple[float, int, _Waiter]] = []
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
        """Advance time by ``seconds`` (>= 0) and wake the waiters now due."""
        if seconds < 0:
            raise ValueError(f"a clock cannot step backwards (step({seconds!r}))")
        with self._lock:
            target = self._now + seconds
        self.set(target)

    def set(self, now: float) -> None:
        """Move time forward to ``now`` and wake the waiters now due."""
        with self._lock:
            if now < self._now:
                raise ValueError(f"a clock cannot go backwards (from {self._now} to {now})")
            self._now = now
            due = []
            while self._heap and self._heap[0][0] <= now:
                _, _, waiter = heapq.heappop(self._heap)
                waiter.fired = True
                due.append(waiter)
            self._lock.notify_all()
        for waiter in due:  # without our lock: a waiter holds its own lock, then takes ours
            waiter.wake()

    # -- observing waiters ------------------------------------------------------------
    def waiter_count(self) -> int:
        """How many threads are blocked on this clock with a deadline."""
        with self._lock:
            return len(self._heap)

    def next_deadline(self) -> Optional[float]:
        """The earliest deadline any waiter has, or None."""
        with self._lock:
            return self._heap[0][0] if self._heap else None

    def block_until_waiters(self, count: int = 1, timeout: float = 10.0) -> None:
        """Block (in real time) until at least ``count`` threads wait with a deadline.

        Raises :class:`TimeoutError` after ``timeout`` real seconds: a test that
        expected a component to be waiting fails loudly instead of hanging.
        """
        deadline = _time.monotonic() + timeout
        with self._lock:
            while len(self._heap) < count:
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"expected {count} waiter(s) on the fake clock, have {len(self._heap)}"
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
    def wait(self, cond: threading.Condition, timeout: Optional[float]) -> bool:
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

    def wait_event(self, event: threading.Event, timeout: Optional[float]) -> bool:
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

    def call_later(self, delay: float, callback: Callable[[], Any]) -> TimerHandle:
        """Register a timer that :meth:`step` fires once time reaches it (it counts as a waiter)."""
        return _FakeTimer(self, self._register(max(0.0, delay), lambda: _call(callback)))

    def __repr__(self) -> str:
        return f"<FakeClock now={self.now():.3f} waiters={self.waiter_count()}>"


class _FakeTimer:
    def __init__(self, clock: "FakeClock", waiter: _Waiter) -> None:
        self._clock = clock
        self._waiter = waiter

    def cancel(self) -> bool:
        return self._clock._unregister(self._waiter)


def _notify_all(cond: threading.Condition) -> None:
    with cond:
        cond.notify_all()

