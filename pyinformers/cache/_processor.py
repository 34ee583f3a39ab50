"""Event handlers of a shared informer: one buffer and one thread per handler.

A :class:`~pyinformers.cache._informer.SharedIndexInformer` hands every change
to each registered handler through a :class:`HandlerRegistration`. Each
registration owns

* an unbounded buffer (a :class:`collections.deque`) of notifications the
  informer thread appends to, and
* a daemon thread, ``pyinformers-handler-<informer>-<n>``, that drains the
  buffer and calls the handler.

So a slow or stuck handler only grows its own buffer: it delays neither the
informer (which never blocks on a handler) nor any other handler. The buffer
size is observable through :meth:`HandlerRegistration.backlog` and the
``pyinformers_informer_handler_backlog`` gauge, and a warning is logged (at
most every :data:`BACKLOG_WARNING_INTERVAL` seconds per handler) while it is
above the informer's ``handler_backlog_warning`` (default
:data:`DEFAULT_BACKLOG_WARNING`), so a stuck handler shows up long before it
has eaten the memory. Removing a handler (or stopping the informer) frees its
buffer at once.

A handler call that raises is logged and counted, and the thread goes on. A
handler thread that ends any other way (``SystemExit`` raised by a handler,
a bug here) reports it: the informer becomes unhealthy with that reason.

Built-in enqueue handlers are the exception: a handler whose class sets
``runs_inline = True`` (the unfiltered :class:`~pyinformers.controller.EnqueueForObject`
and :class:`~pyinformers.controller.EnqueueForOwner` handlers a ``Controller``
binds; they compute keys and make a non-blocking ``queue.add``) is called by
the informer thread itself, with no buffer and no thread. User handlers
always get their own thread.

Ordering: notifications reach one handler in the order the informer produced
them, which is the order of the changes per key. Different handlers are not
coordinated with each other.

Wake-ups are batched: the producer notifies the handler thread's condition
only when that thread has announced it is about to sleep. While the handler
thread is busy it finds the next notification already in the buffer, so a
burst of N events costs one wake-up, not N (a wake-up costs about as much as a
JSON decode; see docs/performance.rst).

:class:`HandlerSet` is the informer's collection of registrations: it fans a
notification out to all of them (or only to those whose resync is due) and
decides, per handler, when a resync is due.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, runtime_checkable

from pyinformers._metrics import LiveSet, collector_for, resolve_registry
from pyinformers.api._resource import ObjectT
from pyinformers.cache._notification import ChangeKind, Notification
from pyinformers.clock import REAL_CLOCK, Clock

__all__ = [
    "BACKLOG_WARNING_INTERVAL",
    "DEFAULT_BACKLOG_WARNING",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "HandlerRegistration",
    "HandlerSet",
    "MINIMUM_RESYNC_PERIOD",
]

log = logging.getLogger(__name__)

#: Resync periods below this are raised to it: a resync replays the whole cache.
MINIMUM_RESYNC_PERIOD = 1.0

#: Default backlog (buffered notifications) above which a handler is warned about.
#: Ten thousand is far beyond what a healthy handler accumulates (a relist of a large
#: cache excepted, which drains in seconds) and still small in memory.
DEFAULT_BACKLOG_WARNING = 10_000
#: Seconds between two backlog warnings about one handler.
BACKLOG_WARNING_INTERVAL = 30.0

# Local names for the kinds (a global lookup on the hot path); see pyinformers.cache._notification.
_ADD = ChangeKind.ADD
_UPDATE = ChangeKind.UPDATE
_DELETE = ChangeKind.DELETE


@runtime_checkable
class ResourceEventHandler(Protocol):
    """What a handler may implement; every method is optional.

    * ``on_add(obj, is_in_initial_list)`` -- an object appeared (or is part of
      the initial list, or of the cache replayed to a handler added late);
    * ``on_update(old, new)`` -- an object changed; ``old is new`` on a resync;
    * ``on_delete(obj)`` -- an object was deleted; ``obj`` is the last known
      object or a :class:`~pyinformers.cache.DeletedFinalStateUnknown`
      tombstone when the deletion happened while the watch was down.

    Handlers receive the cached objects themselves: never mutate them.
    """


@dataclass(frozen=True)
class ResourceEventHandlerFuncs(Generic[ObjectT]):
    """A handler made of plain functions; ``None`` means "not interested".

    Generic in the object type, for type checkers:
    ``ResourceEventHandlerFuncs[Pod](on_add=...)`` checks the functions'
    use of the objects they receive (a tombstone may reach ``on_delete``).

    >>> ResourceEventHandlerFuncs(on_add=lambda obj, initial: print("added", obj["metadata"]["name"]))
    """

    on_add: Callable[[ObjectT, bool], Any] | None = None
    on_update: Callable[[ObjectT, ObjectT], Any] | None = None
    on_delete: Callable[[Any], Any] | None = None


class HandlerRegistration:
    """One handler registered with an informer: its buffer, thread and sync state.

    Returned by :meth:`SharedIndexInformer.add_event_handler`; users call
    :meth:`has_synced`, :meth:`backlog` and :meth:`remove`.

    Invariants:

    * only the informer appends to the buffer, always while holding the
      informer's delivery lock, so notifications are buffered in order;
    * only the handler thread pops from the buffer and calls the handler, so
      the handler is never called concurrently with itself;
    * ``_initial_queued`` (written by the producer) counts notifications
      flagged ``is_in_initial_list`` that were buffered; ``_initial_done``
      (written only by the handler thread) counts those the handler finished.
      Each counter has a single writer, so no lock is needed to update them.

    Thread-safety: every public method may be called from any thread.
    """

    def __init__(
        self,
        handler: Any,
        *,
        informer_name: str,
        number: int,
        resync_period: float,
        upstream_synced: Callable[[], bool],
        on_remove: Callable[[HandlerRegistration], None],
        on_caught_up: Callable[[], None] | None = None,
        backlog_warning: int = DEFAULT_BACKLOG_WARNING,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        on_add = getattr(handler, "on_add", None)
        on_update = getattr(handler, "on_update", None)
        on_delete = getattr(handler, "on_delete", None)
        if on_add is None and on_update is None and on_delete is None:
            raise TypeError(
                f"an event handler needs at least one of on_add, on_update, on_delete; got {handler!r}"
            )
        for label, fn in (("on_add", on_add), ("on_update", on_update), ("on_delete", on_delete)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{label} of {handler!r} is not callable")
        self.handler = handler
        self.informer_name = informer_name
        self.number = number
        #: Seconds between resyncs for this handler (0: never).
        self.resync_period = float(resync_period)
        self._on_add = on_add
        self._on_update = on_update
        self._on_delete = on_delete
        self._upstream_synced = upstream_synced
        self._on_remove = on_remove
        # Called (handler thread) when the last initial add buffered so far was handled,
        # so that waiters for has_synced() are woken instead of polling.
        self._on_caught_up = on_caught_up
        # Called with the reason when the handler thread ends while not stopped.
        self._on_failure = on_failure
        if backlog_warning < 0:
            raise ValueError(f"handler_backlog_warning must be >= 0, got {backlog_warning!r}")
        self.backlog_warning = int(backlog_warning)
        self._warn_above = self.backlog_warning or sys.maxsize
        self._next_backlog_warning = 0.0

        self._buffer: deque = deque()
        self._cond = threading.Condition(threading.Lock())
        # True while the handler thread is (about to be) blocked on _cond. The producer
        # notifies only then: a busy handler thread finds new items without a wake-up.
        self._sleeping = False
        self._stopped = False
        self._removed = False
        self._thread: threading.Thread | None = None

        self._initial_queued = 0
        self._initial_done = 0
        self._handled = 0  # notifications handled (written by the handler thread only)
        # Monotonic time the handler thread last finished a notification or woke up for one
        # (handler thread only): with a backlog, how long ago it is says whether it is stuck.
        self._last_progress = time.monotonic()
        self._errors = 0  # handler calls that raised (handler thread only)
        #: Monotonic time of this handler's next resync (HandlerSet's lock guards it).
        self.next_resync: float = 0.0

    # -- public -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """``<informer>-<n>``: the handler's label in thread names and metrics."""
        return f"{self.informer_name}-{self.number}"

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler finished its initial adds.

        For a handler registered before the informer started, the initial adds
        are the initial list; for one added later, the cache as it was when it
        was added (plus any initial-list items still arriving).
        """
        if not self._upstream_synced():
            return False
        return self._initial_done >= self._initial_queued

    def backlog(self) -> int:
        """Notifications buffered and not yet handed to the handler.

        Does not count the one the handler is running right now. A number that
        keeps growing means the handler cannot keep up (or is stuck).
        """
        return len(self._buffer)

    def stalled_for(self, now: float | None = None) -> float:
        """Seconds this handler has had notifications waiting without finishing any (0: not stalled).

        A handler stuck in a call, or too slow to finish one notification,
        shows here while its backlog waits; an idle handler (empty buffer)
        is never stalled. Monotonic seconds.
        """
        if not self._buffer:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - self._last_progress)

    @property
    def handled(self) -> int:
        """How many notifications the handler has been called for."""
        return self._handled

    @property
    def errors(self) -> int:
        """How many handler calls raised (they are logged, then skipped)."""
        return self._errors

    def is_removed(self) -> bool:
        return self._removed

    def remove(self, timeout: float = 5.0) -> bool:
        """Unregister the handler: it gets no further notifications and its thread ends.

        Notifications still buffered are dropped (the buffer is freed at once).
        Waits up to ``timeout`` seconds for the thread to finish the call it may
        be in (not when called from the handler itself). Returns True when the
        thread has ended (or never ran). Idempotent.
        """
        if not self._removed:
            self._removed = True
            self._on_remove(self)
        return self.stop(timeout=timeout)

    # -- informer side ----------------------------------------------------------------
    def start(self) -> None:
        """Start the handler thread (idempotent; no-op after stop)."""
        with self._cond:
            if self._thread is not None or self._stopped:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"pyinformers-handler-{self.name}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the handler thread (dropping what is buffered) and wait up to ``timeout`` seconds for it to end."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
            thread = self._thread
        # Nothing buffered will be delivered any more: free it now, not when the registration goes.
        self._buffer.clear()
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def add(self, notification: Notification, key: str | None = None) -> None:
        """Buffer one notification (informer side; caller holds the delivery lock).

        ``key`` is the changed object's cache key when the informer knows it;
        a threaded handler does not need it.
        """
        buffer = self._buffer
        buffer.append(notification)
        # The handler thread sets _sleeping *before* re-checking the buffer, so either
        # it sees our item, or we see _sleeping and wake it: no wake-up is ever lost.
        if self._sleeping:
            with self._cond:
                self._cond.notify()
        if len(buffer) > self._warn_above:
            self._backlog_high(len(buffer))

    def _backlog_high(self, backlog: int) -> None:
        """Warn that the handler falls behind, at most every BACKLOG_WARNING_INTERVAL seconds."""
        now = time.monotonic()
        if now < self._next_backlog_warning:
            return
        self._next_backlog_warning = now + BACKLOG_WARNING_INTERVAL
        log.warning(
            "event handler %s is %d notifications behind (warning threshold %d): it is slow or stuck; "
            "every buffered notification keeps its object in memory (see %d handled, %d failed so far)",
            self.name,
            backlog,
            self.backlog_warning,
            self._handled,
            self._errors,
        )

    def add_initial(self, obj: Any, key: str | None = None) -> None:
        """Buffer an add flagged ``is_in_initial_list`` (counts towards has_synced)."""
        self._initial_queued += 1
        self.add((_ADD, obj, True))

    # -- handler thread ---------------------------------------------------------------
    def _wait_for_work(self) -> bool:
        """Sleep until the buffer has items; False when stopped."""
        with self._cond:
            self._sleeping = True
            try:
                while not self._buffer and not self._stopped:
                    self._cond.wait()
            finally:
                self._sleeping = False
            self._last_progress = time.monotonic()
            return not self._stopped

    def _run(self) -> None:
        """The handler thread: deliver until stopped; ending any other way is reported."""
        try:
            self._deliver()
        except BaseException as error:  # logged and reported: the thread just ends
            if not self._stopped:
                log.error("event handler %s: its thread crashed", self.name, exc_info=True)
                self._report_failure(f"handler {self.name} thread crashed: {_one_line(error)}")
            return
        if not self._stopped:
            self._report_failure(f"handler {self.name} thread ended unexpectedly")

    def _report_failure(self, reason: str) -> None:
        if self._on_failure is not None:
            self._on_failure(reason)

    def _deliver(self) -> None:
        popleft = self._buffer.popleft
        on_add, on_update, on_delete = self._on_add, self._on_update, self._on_delete
        while True:
            try:
                kind, a, b = popleft()
            except IndexError:
                if not self._wait_for_work():
                    return
                continue
            if self._stopped:
                return
            try:
                if kind == _UPDATE:
                    if on_update is not None:
                        on_update(a, b)
                elif kind == _ADD:
                    if on_add is not None:
                        on_add(a, b)
                elif on_delete is not None:
                    on_delete(a)
            except Exception:  # a handler bug must not kill the handler thread
                self._errors += 1
                log.exception("event handler %s failed", self.name)
            self._handled += 1
            self._last_progress = time.monotonic()
            if kind == _ADD and b is True:
                self._initial_done += 1
                if self._initial_done >= self._initial_queued and self._on_caught_up is not None:
                    self._on_caught_up()

    def __repr__(self) -> str:
        state = (
            "removed"
            if self._removed
            else ("stopped" if self._stopped else "running" if self._thread else "pending")
        )
        return (
            f"<HandlerRegistration {self.name!r} {state} backlog={self.backlog()} "
            f"handled={self._handled} resync={self.resync_period:g}s synced={self.has_synced()}>"
        )


class _InlineRegistration(HandlerRegistration):
    """A handler the delivering thread calls itself: no buffer, no thread, no hand-off.

    For handlers that declare ``runs_inline = True``: the built-in enqueue
    handlers, which only compute keys and make a non-blocking ``queue.add``
    (see :mod:`pyinformers.controller._handlers`). Calling them where the
    change is applied saves a thread wake-up per event (about as much CPU as
    decoding the event) and frees the replaced object at once instead of
    keeping it alive in a buffer.

    A handler that also has ``on_event_key(key)`` declares that its whole
    reaction to an add, update or delete of the object with cache key ``key``
    (tombstones included) is ``on_event_key(key)``; it is then given the key
    the informer already computed instead of the objects (the unfiltered
    :class:`~pyinformers.controller.EnqueueForObject` does this: one key
    computation per event).

    Invariants: the handler runs on the delivering thread (the reflector's
    for a watch event, the informer's for a backlog), under the delivery
    lock, in notification order (the same order a threaded handler sees); an
    exception is counted, logged and skipped; ``backlog()`` is always 0.
    User handlers never run inline: they might block the cache.
    """

    def __init__(self, handler: Any, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._on_event_key: Callable[[str], Any] | None = getattr(handler, "on_event_key", None)

    def start(self) -> None:
        pass

    def stop(self, timeout: float = 5.0) -> bool:
        self._stopped = True
        return True

    def add(self, notification: Notification, key: str | None = None) -> None:
        if self._stopped:
            return
        try:
            if key is not None and self._on_event_key is not None:
                self._on_event_key(key)
            else:
                kind, a, b = notification
                if kind == _UPDATE:
                    if self._on_update is not None:
                        self._on_update(a, b)
                elif kind == _ADD:
                    if self._on_add is not None:
                        self._on_add(a, b)
                elif self._on_delete is not None:
                    self._on_delete(a)
        except Exception:
            self._errors += 1
            log.exception("event handler %s failed", self.name)
        self._handled += 1

    def add_initial(self, obj: Any, key: str | None = None) -> None:
        self.add((_ADD, obj, True), key)

    def __repr__(self) -> str:
        return "<inline " + super().__repr__()[1:]


def runs_inline(handler: Any) -> bool:
    """Whether ``handler`` asks to be called on the informer thread (``runs_inline = True``)."""
    return getattr(handler, "runs_inline", False) is True


class HandlerSet:
    """The registrations of one informer, and the per-handler resync schedule.

    All mutation happens under the informer's delivery lock (``lock``): the
    informer holds it while it distributes a popped change, and
    :meth:`add`/:meth:`remove` take it, so a handler added late gets a
    consistent snapshot of the cache followed by exactly the later changes.

    Resync: :meth:`should_resync` (called by the reflector every resync check
    period) marks the registrations whose period is due as *syncing*;
    notifications caused by a resync go only to those.
    """

    def __init__(
        self,
        *,
        informer_name: str,
        lock: threading.RLock,
        clock: Clock = REAL_CLOCK,
        backlog_warning: int = DEFAULT_BACKLOG_WARNING,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        if backlog_warning < 0:
            raise ValueError(f"handler_backlog_warning must be >= 0, got {backlog_warning!r}")
        self.informer_name = informer_name
        self.lock = lock
        self._clock = clock
        self._backlog_warning = int(backlog_warning)
        self._on_failure = on_failure
        self._all: list[HandlerRegistration] = []  # copy-on-write: never mutated in place
        self._syncing: list[HandlerRegistration] = []  # copy-on-write too
        self._numbers = iter(range(1, 1 << 62))
        self._running = False

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[HandlerRegistration]:
        return iter(self._all)

    def new_registration(
        self,
        handler: Any,
        *,
        resync_period: float,
        upstream_synced: Callable[[], bool],
        on_caught_up: Callable[[], None] | None = None,
    ) -> HandlerRegistration:
        kind = _InlineRegistration if runs_inline(handler) else HandlerRegistration
        return kind(
            handler,
            informer_name=self.informer_name,
            number=next(self._numbers),
            resync_period=resync_period,
            upstream_synced=upstream_synced,
            on_remove=self.remove,
            on_caught_up=on_caught_up,
            backlog_warning=self._backlog_warning,
            on_failure=self._on_failure,
        )

    def owns(self, registration: Any) -> bool:
        """Whether ``registration`` was made by this set (removed ones included)."""
        return getattr(registration, "_on_remove", None) == self.remove

    def add(self, registration: HandlerRegistration) -> None:
        """Register (caller holds ``lock``); starts its thread if the set is running."""
        period = registration.resync_period
        registration.next_resync = self._clock.now() + period if period > 0 else 0.0
        self._all = self._all + [registration]
        if self._running:
            registration.start()

    def remove(self, registration: HandlerRegistration) -> None:
        with self.lock:
            self._all = [r for r in self._all if r is not registration]
            self._syncing = [r for r in self._syncing if r is not registration]

    def start(self) -> None:
        with self.lock:
            self._running = True
            for registration in self._all:
                registration.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every handler thread; True if all ended within ``timeout`` (shared).

        Joining is measured in real time, whatever the clock: threads end in real time.
        """
        with self.lock:
            self._running = False
            registrations = list(self._all)
        for registration in registrations:  # signal all first, then join: they end in parallel
            registration.stop(timeout=0)
        deadline = time.monotonic() + timeout
        ok = True
        for registration in registrations:
            ok = registration.stop(timeout=max(0.0, deadline - time.monotonic())) and ok
        return ok

    # -- fan-out (caller holds lock) --------------------------------------------------
    def distribute(
        self, notification: Notification, key: str | None = None, sync: bool = False
    ) -> None:
        """Hand ``notification`` (about the object with cache key ``key``, when known) to every
        handler, or only to the syncing ones."""
        for registration in self._syncing if sync else self._all:
            registration.add(notification, key)

    def distribute_initial(self, obj: Any, key: str | None = None) -> None:
        for registration in self._all:
            registration.add_initial(obj, key)

    # -- resync ------------------------------------------------------------------------
    def should_resync(self) -> bool:
        """Mark the handlers whose resync is due; True if any is.

        Called by the reflector once per resync check period, just before it
        asks the DeltaFIFO to queue a Sync for every cached object.
        """
        with self.lock:
            now = self._clock.now()
            due = []
            for registration in self._all:
                period = registration.resync_period
                if period > 0 and now >= registration.next_resync:
                    due.append(registration)
                    registration.next_resync = now + period
            self._syncing = due
            return bool(due)

    def registrations(self) -> list[HandlerRegistration]:
        return list(self._all)

    def __repr__(self) -> str:
        return f"<HandlerSet {self.informer_name!r} handlers={len(self._all)} syncing={len(self._syncing)}>"


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def effective_resync_period(
    requested: float, check_period: float, *, started: bool
) -> tuple[float, float]:
    """Reconcile a handler's requested resync period with the informer's check period.

    Returns ``(handler_period, check_period)``. A period of 0 means "never".
    Periods below :data:`MINIMUM_RESYNC_PERIOD` are raised to it. Before the
    informer starts, a handler asking for a shorter period than the current
    check period lowers the check period; after it started the check period is
    fixed, so the handler's period is raised to it.
    """
    if requested < 0:
        raise ValueError(f"resync_period must be >= 0, got {requested!r}")
    if requested == 0:
        return 0.0, check_period
    requested = max(float(requested), MINIMUM_RESYNC_PERIOD)
    if check_period == 0 or requested < check_period:
        if started:
            if check_period == 0:
                log.warning(
                    "resync_period %.3gs ignored: the informer started without resync", requested
                )
                return 0.0, check_period
            log.warning(
                "resync_period %.3gs raised to the informer's resync check period %.3gs (already started)",
                requested,
                check_period,
            )
            return check_period, check_period
        return requested, requested
    return requested, check_period


# -- metrics -----------------------------------------------------------------------------
class _InformerCollector:
    """A Prometheus collector reading informer state at scrape time (no per-event cost)."""

    def __init__(self) -> None:
        self._informers: LiveSet[Any] = LiveSet()
        self.track = self._informers.add

    def describe(self) -> Iterable[Any]:
        return []  # no fixed description: avoids duplicate-name checks against dynamic labels

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        backlog = GaugeMetricFamily(
            "pyinformers_informer_handler_backlog",
            "Notifications buffered for an event handler and not yet delivered.",
            labels=["informer", "handler"],
        )
        handled = CounterMetricFamily(
            "pyinformers_informer_handler_notifications",
            "Notifications delivered to an event handler.",
            labels=["informer", "handler"],
        )
        errors = CounterMetricFamily(
            "pyinformers_informer_handler_errors",
            "Event handler calls that raised an exception.",
            labels=["informer", "handler"],
        )
        objects = GaugeMetricFamily(
            "pyinformers_informer_cache_objects",
            "Objects in an informer's cache.",
            labels=["informer"],
        )
        cache_bytes = GaugeMetricFamily(
            "pyinformers_informer_cache_bytes",
            "About how many bytes an informer's cache holds (estimated from a sample of its objects, refreshed at most every 30 s).",
            labels=["informer"],
        )
        object_errors = CounterMetricFamily(
            "pyinformers_informer_object_errors",
            "Objects a transform, the key function or an index function failed on (stage: transform, key, index).",
            labels=["informer", "stage"],
        )
        healthy = GaugeMetricFamily(
            "pyinformers_informer_healthy",
            "1 while the informer is healthy: running, no thread ended unexpectedly, the watch not failing.",
            labels=["informer"],
        )
        synced = GaugeMetricFamily(
            "pyinformers_informer_synced",
            "1 once the informer's initial list is in its cache and delivered, else 0.",
            labels=["informer"],
        )
        stalled = GaugeMetricFamily(
            "pyinformers_informer_handler_stalled_seconds",
            "Seconds an event handler has had notifications waiting without finishing any (0: not stalled).",
            labels=["informer", "handler"],
        )
        informers = self._informers.snapshot()
        now = time.monotonic()
        for informer in informers:
            objects.add_metric([informer.name], len(informer.indexer))
            estimate = getattr(informer, "memory_estimate", None)
            if estimate is not None:
                cache_bytes.add_metric([informer.name], estimate().bytes)
            synced.add_metric([informer.name], 1.0 if informer.has_synced() else 0.0)
            healthy.add_metric([informer.name], 1.0 if informer.healthy() else 0.0)
            for stage, count in sorted(informer.object_errors().items()):
                object_errors.add_metric([informer.name, stage], count)
            for registration in informer.registrations():
                label = [informer.name, str(registration.number)]
                backlog.add_metric(label, registration.backlog())
                handled.add_metric(label, registration.handled)
                errors.add_metric(label, registration.errors)
                stalled.add_metric(label, registration.stalled_for(now))
        return [
            backlog,
            handled,
            errors,
            stalled,
            objects,
            cache_bytes,
            synced,
            healthy,
            object_errors,
        ]


def track_informer(informer: Any, registry: Any = None) -> None:
    """Expose ``informer``'s handler and cache metrics on ``registry``.

    ``registry`` follows :func:`pyinformers._metrics.resolve_registry`: ``None``
    is the global registry, ``False`` exposes nothing. One collector per registry.
    """
    resolved = resolve_registry(registry)
    if resolved is not None:
        collector_for(resolved, _InformerCollector).track(informer)
