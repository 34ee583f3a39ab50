"""The work queue: fair, stingy, thread-safe hand-off of keys to workers.

This module owns :class:`Queue`, the base of the queue family (the delaying
queue in :mod:`.delaying` and the rate-limiting queue in :mod:`.rate_limiting`
wrap it). Its rules are client-go's ``workqueue.Type``:

* **Fair** -- items are handed out in the order they were first added.
* **Stingy** -- an item waiting in the queue is queued once however often it
  is added; an item being processed is never handed to a second worker. If it
  is added again while it is processed, it is queued again when the worker
  calls :meth:`Queue.done`.
* **Shutdown** -- after :meth:`Queue.shutdown` adds are ignored, items already
  queued are still handed out, and once the queue is empty every
  :meth:`Queue.get` returns ``(None, True)``.

Threading: one :class:`threading.Lock` guards all state; one
:class:`threading.Condition` on that lock parks workers waiting in ``get`` and
another parks callers of ``shutdown_with_drain``. The queue counts its parked
workers, so an ``add`` only notifies when someone is actually waiting and a
``get`` that finds an item ready neither blocks nor wakes anybody. Every
method may be called from any thread.

The hot path (``add``, ``get``, ``done``) takes the lock with
``acquire()``/``try``/``finally: release()`` rather than ``with``: on CPython
3.11 a ``with`` on a lock costs about 100 ns more (it looks up and binds
``__enter__`` and ``__exit__`` and calls the latter with three arguments),
which is a quarter of an add + get + done cycle. When that lock is contended
(many informer threads adding to one controller's queue), the hot path does
not sleep on it: :func:`~pyinformers._locking.acquire_contended`
hands the GIL to the holder and retries, which keeps the threads out of a
lock convoy (two context switches per acquisition).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import Any

from pyinformers._locking import acquire_contended
from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.workqueue._metrics import FOLD_AT as _FOLD_AT
from pyinformers.workqueue._metrics import QueueMetrics, new_queue_metrics

__all__ = ["Queue"]

#: What ``done`` finds for an item that is not being processed.
_NOT_PROCESSING = object()


class Queue:
    """A deduplicating FIFO of hashable items with a processing set.

    ``name`` labels the queue's Prometheus metrics (see :mod:`.metrics`);
    unnamed queues record nothing and pay nothing for metrics. ``clock``
    measures ``get`` and drain timeouts and metric durations.
    ``metrics_registry`` is the :class:`prometheus_client.CollectorRegistry`
    a named queue reports to (the default registry when ``None``; ``False``
    turns metrics off for a named queue, as elsewhere in pyinformers).

    A worker loop::

        while True:
            key, shutting_down = queue.get()
            if shutting_down:
                return
            try:
                process(key)
            finally:
                queue.done(key)

    Thread-safety: all methods may be called concurrently from any thread.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        clock: Clock | None = None,
        metrics_registry: Any = None,
    ) -> None:
        self._name = name
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        self._lock = threading.Lock()
        # Workers blocked in get() wait here; _waiting counts them so that add()
        # and done() skip notify() (and its cost) when nobody waits.
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        # Callers of shutdown_with_drain() wait here for processing to empty.
        self._drained = threading.Condition(self._lock)
        self._drain_waiting = 0

        # The order in which items are handed out. Invariant: every item in
        # _queue is in _dirty and not in _processing, and appears exactly once.
        self._queue: deque[Hashable] = deque()
        # Every item that needs processing (queued, or re-added while being
        # processed). Invariant: _queue's items == _dirty - _processing.
        # Values: the clock time the item was added in a queue with metrics
        # (its queue duration starts there), None otherwise. Items leave
        # _dirty only through get().
        self._dirty: dict[Hashable, float | None] = {}
        # Items a worker holds between get() and done(). Invariant: an item is
        # in _processing at most once, so no item is processed concurrently.
        # Values: the clock time get() handed the item out (with metrics), or None.
        self._processing: dict[Hashable, float | None] = {}

        # Once True, never False again: adds are ignored and get() stops
        # blocking.
        self._shutting_down = False
        # True while shutdown_with_drain() waits for _processing to empty;
        # a later shutdown() clears it and releases the drain waiters.
        self._drain = False

        # The metrics recorder of a named queue; None (and free) for unnamed queues.
        self._metrics: QueueMetrics | None = None
        if name is not None and metrics_registry is not False:
            self._metrics = new_queue_metrics(
                name,
                lock=self._lock,
                dirty=self._dirty,
                processing=self._processing,
                clock=self._clock,
                registry=metrics_registry,
            )

    # -- the hot path -------------------------------------------------------------
    def add(self, item: Hashable) -> None:
        """Mark ``item`` as needing processing.

        Queues it unless it is already queued; if a worker is processing it,
        it is queued again when that worker calls :meth:`done`. Ignored once
        the queue is shutting down.
        """
        lock = self._lock
        if not lock.acquire(False):
            acquire_contended(lock)
        try:
            if self._shutting_down:
                return
            dirty = self._dirty
            if item in dirty:
                return
            metrics = self._metrics
            dirty[item] = None if metrics is None else metrics.now()
            if item in self._processing:
                return
            self._queue.append(item)
            if self._waiting:
                self._cond.notify()
        finally:
            lock.release()

    def get(self, timeout: float | None = None) -> tuple[Any, bool]:
        """Take the next item for processing: ``(item, False)``.

        Blocks until an item is queued, for at most ``timeout`` seconds of the
        queue's clock (``None`` waits without limit, ``0`` does not wait) and
        raises :class:`TimeoutError` when it elapses. Returns ``(None, True)``
        once the queue is shutting down and empty: the worker should exit.

        The caller owns the item until it calls :meth:`done` with it.
        """
        lock = self._lock
        if not lock.acquire(False):
            acquire_contended(lock)
        try:
            queue = self._queue
            if not queue:
                if self._shutting_down:
                    return None, True
                self._wait_for_item(timeout)
                if not queue:
                    return None, True
            item = queue.popleft()
            added = self._dirty.pop(item)
            metrics = self._metrics
            if metrics is None:
                self._processing[item] = None
                return item, False
            now = metrics.now()
            self._processing[item] = now
            waits = metrics.waits
            waits.append(now - added)
            if len(waits) >= _FOLD_AT:
                metrics.fold()
            return item, False
        finally:
            lock.release()

    def done(self, item: Hashable) -> None:
        """Mark ``item`` as processed; queue it again if it was added meanwhile.

        Calling ``done`` for an item that is not being processed does nothing.
        """
        lock = self._lock
        if not lock.acquire(False):
            acquire_contended(lock)
        try:
            processing = self._processing
            started = processing.pop(item, _NOT_PROCESSING)
            if started is _NOT_PROCESSING:
                return
            metrics = self._metrics
            if metrics is not None:
                metrics.works.append(metrics.now() - started)
            if item in self._dirty:
                self._queue.append(item)
                if self._waiting:
                    self._cond.notify()
            elif self._drain_waiting and not processing:
                self._drained.notify_all()
        finally:
            lock.release()

    def _wait_for_item(self, timeout: float | None) -> None:
        """Block (holding the lock) until an item is queued or shutdown starts.

        Raises TimeoutError when ``timeout`` elapses first.
        """
        queue = self._queue
        clock = self._clock
        deadline = None if timeout is None else clock.now() + timeout
        self._waiting += 1
        try:
            while not queue and not self._shutting_down:
                if deadline is None:
                    self._cond.wait()
                    continue
                remaining = deadline - clock.now()
                if remaining <= 0:
                    raise TimeoutError(f"no item in {self._describe()} within {timeout} s")
                clock.wait(self._cond, remaining)
        finally:
            self._waiting -= 1

    # -- state ----------------------------------------------------------------------
    def __len__(self) -> int:
        """The number of items queued (ready for :meth:`get`), not counting processing."""
        return len(self._queue)

    @property
    def name(self) -> str | None:
        """The queue's name (its metrics label), or None."""
        return self._name

    @property
    def clock(self) -> Clock:
        """The clock that measures this queue's timeouts and durations."""
        return self._clock

    def processing_count(self) -> int:
        """How many items workers hold between :meth:`get` and :meth:`done`."""
        return len(self._processing)

    def shutting_down(self) -> bool:
        """True once :meth:`shutdown` or :meth:`shutdown_with_drain` was called."""
        return self._shutting_down

    # -- shutting down --------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop accepting items and wake every waiting :meth:`get`.

        Items already queued are still handed out; once the queue is empty,
        ``get`` returns ``(None, True)``. Releases any caller blocked in
        :meth:`shutdown_with_drain`. Idempotent.
        """
        with self._lock:
            self._shutting_down = True
            self._drain = False
            self._cond.notify_all()
            self._drained.notify_all()
        self._stop_background()

    def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down like :meth:`shutdown`, then wait until no item is being processed.

        Returns True once processing is empty, False if ``timeout`` (seconds
        of the queue's clock) elapsed first or a concurrent :meth:`shutdown`
        cancelled the drain. Workers must keep calling :meth:`done`, or this
        waits for ``timeout``.
        """
        with self._lock:
            self._shutting_down = True
            self._drain = True
            self._cond.notify_all()
        self._stop_background()
        clock = self._clock
        with self._lock:
            deadline = None if timeout is None else clock.now() + timeout
            self._drain_waiting += 1
            try:
                while self._processing and self._drain:
                    if deadline is None:
                        self._drained.wait()
                        continue
                    remaining = deadline - clock.now()
                    if remaining <= 0:
                        return False
                    clock.wait(self._drained, remaining)
                return not self._processing
            finally:
                self._drain_waiting -= 1

    def _stop_background(self) -> None:
        """Hook for subclasses that run background threads; called without the lock."""

    # -- looking at it --------------------------------------------------------------
    def _describe(self) -> str:
        kind = type(self).__name__
        return f"{kind} {self._name!r}" if self._name is not None else kind

    def _state_fields(self) -> list[str]:
        """``key=value`` fields for ``repr``; called with the queue lock held."""
        return [f"queued={len(self._queue)}", f"processing={len(self._processing)}"]

    def __repr__(self) -> str:
        with self._lock:
            fields = self._state_fields()
            if self._shutting_down:
                fields.append("shutting-down")
            return f"<{self._describe()} {' '.join(fields)}>"
