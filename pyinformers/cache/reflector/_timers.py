"""The clock timers of a :class:`~pyinformers.cache.reflector._reflector.Reflector`.

What a reflector does at a time is a timer of its clock
(:meth:`~pyinformers.clock.Clock.call_later`), run by the clock: on the real
clock by the process's one timer thread, on a
:class:`~pyinformers.clock.FakeClock` inside the reflector's ``step()``, so a
test that steps past a stall finds the watch closed when ``step`` returns.
This module owns them, one class per kind:

* :class:`SilenceTimer` -- closes a watch stream that said nothing for a
  given time. The reflector uses one per watch for stall detection
  (``stall_timeout``), and one per streaming list for the initial events
  (``initial_events_timeout``). When it fires it compares the clock with the
  time of the last word from the server, re-arms itself for the rest of the
  window if the stream spoke since, and otherwise marks itself fired and
  closes the stream. Events only write a timestamp: the hot path never
  touches a timer.
* :class:`PeriodicResync` -- every ``period`` (from the start of one resync
  to the next), once the first list is in the store, a short-lived thread
  ``pyinformers-reflector-<name>-resync`` calls ``resync()`` if
  ``should_resync()`` agrees: a resync walks the whole cache, too slow for a
  timer callback. A period that comes while a resync runs makes it run once
  more when done.
* :class:`StopPoll` -- looks at a :class:`threading.Event` every 0.2 s of the
  *real* clock (an event is set in real time, whatever clock the reflector
  runs on) and calls back once it is set.

Thread-safety: each timer has its own lock; ``start``/``cancel`` may be
called from any thread, and the callbacks run on the clock's timer thread.
No timer calls back into its owner while holding its lock, except
:class:`SilenceTimer`'s ``last_activity`` reader, which must only read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from pyinformers.clock import REAL_CLOCK, Clock, TimerHandle

__all__ = ["Closable", "SilenceTimer", "PeriodicResync", "StopPoll", "STOP_POLL_INTERVAL"]

log = logging.getLogger("pyinformers.reflector")

#: Real seconds between two looks at a :class:`StopPoll`'s event.
STOP_POLL_INTERVAL = 0.2


class Closable(Protocol):
    """What a :class:`SilenceTimer` closes (a :class:`~pyinformers.api._watch.WatchStream`)."""

    def close(self) -> None: ...


class SilenceTimer:
    """Close ``stream`` once ``last_activity()`` is ``timeout`` seconds old (see the module doc).

    ``last_activity()`` returns the clock time of the stream's last word (None:
    not known yet, the timer does nothing). ``on_silence()``, if given, is
    called just before the stream is closed (outside the lock).

    Invariant: :attr:`fired` turns True at most once, and only while the
    timer was armed (started and not cancelled); a cancelled timer never
    closes the stream.
    """

    def __init__(
        self,
        clock: Clock,
        timeout: float,
        stream: Closable,
        last_activity: Callable[[], float | None],
        *,
        on_silence: Callable[[], None] | None = None,
    ) -> None:
        self._clock = clock
        self.timeout = timeout
        self._stream = stream
        self._last_activity = last_activity
        self._on_silence = on_silence
        self._lock = threading.Lock()
        self._handle: TimerHandle | None = None  # set exactly while armed; under _lock
        self._fired = False

    @property
    def fired(self) -> bool:
        """True once the timer closed the stream for silence."""
        return self._fired

    def start(self) -> None:
        """Arm the timer for ``timeout`` seconds from now."""
        with self._lock:
            self._handle = self._clock.call_later(self.timeout, self._fire)

    def cancel(self) -> None:
        """Disarm the timer (a no-op once fired or cancelled)."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()

    def _fire(self) -> None:
        with self._lock:
            last = self._last_activity()
            if self._handle is None or last is None:
                return  # cancelled as it fired
            silent = self._clock.now() - last
            if silent < self.timeout:  # it spoke since the timer was armed: wait out the rest
                self._handle = self._clock.call_later(self.timeout - silent, self._fire)
                return
            self._fired = True
            self._handle = None
        if self._on_silence is not None:
            self._on_silence()
        self._stream.close()


class PeriodicResync:
    """Call ``resync()`` every ``period`` seconds of ``clock`` once ``ready()``, on a thread of its own.

    ``store.resync()`` walks the whole cache (about 0.6 s for 100,000
    objects), too long for a timer callback, which would hold up every timer
    of the process behind it: it runs on a thread of its own,
    ``pyinformers-reflector-<name>-resync``, which ends with it. Periods that
    come while a resync runs ask it for one more pass (several coalesce into
    one), so every period is followed by a resync and a slow resync never
    piles up threads. :attr:`count` counts finished resyncs (a test on a fake
    clock steps a period, then waits for it).

    Invariant (under ``_lock``): ``_thread`` is set exactly while a resync
    thread runs (it clears itself as it leaves); ``_timer`` is set exactly
    between :meth:`start` and :meth:`cancel`.
    """

    def __init__(
        self,
        *,
        name: str,
        clock: Clock,
        period: float,
        resync: Callable[[], None],
        should_resync: Callable[[], bool] | None,
        ready: Callable[[], bool],
    ) -> None:
        self._name = name
        self._clock = clock
        self._period = period
        self._resync = resync
        self._should_resync = should_resync
        self._ready = ready
        self._lock = threading.Lock()
        self._timer: TimerHandle | None = None
        self._thread: threading.Thread | None = None
        self._again = False
        self.count = 0  # finished resyncs; written by the resync thread

    def start(self) -> None:
        """Arm the timer for the first period."""
        with self._lock:
            self._timer = self._clock.call_later(self._period, self._on_timer)

    def cancel(self) -> None:
        """Disarm, and wait for a running resync: nothing touches the store once this returns."""
        with self._lock:
            timer, self._timer = self._timer, None
            thread = self._thread
        if timer is not None:
            timer.cancel()
        if thread is not None:
            thread.join()

    def _on_timer(self) -> None:
        """The timer (clock's timer thread): re-arm, and start this period's resync."""
        with self._lock:
            if self._timer is None:  # cancelled while it fired
                return
            self._timer = self._clock.call_later(self._period, self._on_timer)
            if not self._ready():
                return
            if self._thread is not None:
                self._again = True
                return
            thread = threading.Thread(
                target=self._passes, name=f"pyinformers-reflector-{self._name}-resync", daemon=True
            )
            self._thread = thread
            thread.start()

    def _passes(self) -> None:
        """The resync thread: resync, again while periods came meanwhile; stop once cancelled."""
        while True:
            try:
                if self._should_resync is None or self._should_resync():
                    try:
                        self._resync()
                    finally:
                        self.count += 1  # counted once done: a test waits on it
            except Exception:  # the next period tries again
                log.exception("%s: periodic resync failed", self._name)
            with self._lock:
                if not self._again or self._timer is None:
                    self._thread = None
                    return
                self._again = False


class StopPoll:
    """Call ``on_set()`` once ``event`` is set, looking every :data:`STOP_POLL_INTERVAL` real seconds."""

    def __init__(self, event: threading.Event, on_set: Callable[[], None]) -> None:
        self._event = event
        self._on_set = on_set
        self._lock = threading.Lock()
        self._timer: TimerHandle | None = (
            None  # set exactly between start() and cancel(); under _lock
        )

    def start(self) -> None:
        with self._lock:
            self._timer = REAL_CLOCK.call_later(STOP_POLL_INTERVAL, self._poll)

    def cancel(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _poll(self) -> None:
        if self._event.is_set():
            self._on_set()
            return
        with self._lock:
            if self._timer is not None:
                self._timer = REAL_CLOCK.call_later(STOP_POLL_INTERVAL, self._poll)
