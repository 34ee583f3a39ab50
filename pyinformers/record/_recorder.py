"""The Kubernetes Events recorder: ``EventRecorder.event(obj, type, reason, message)``.

A controller records what it did and what went wrong as ``core/v1`` Events
about the objects it manages (``kubectl describe`` shows them). Recording
must never slow down or break a reconcile, so :meth:`EventRecorder.event`
only validates its arguments, correlates the occurrence and puts it in a
bounded buffer; one writer thread (``pyinformers-recorder-<component>``)
writes the buffer to the API server.

What happens to an occurrence:

* it is *correlated* (:mod:`pyinformers.record._correlator`): identical events
  within the window aggregate into one Event whose ``count`` grows, and past
  ``max_similar`` distinct messages for one object and reason, similar events
  are combined into one, the way client-go's correlator does; the first
  occurrence creates the Event, later ones patch ``count``, ``lastTimestamp``
  and ``message``;
* it waits in the buffer, keyed by Event: occurrences of an Event that is
  already waiting do not take a second slot (a burst of the same failure
  costs one write);
* when the buffer already holds ``buffer_size`` Events, a new one is dropped,
  counted in :attr:`EventRecorder.stats`, and reported by a warning log at
  most once per ``warn_interval`` seconds; ``event`` never raises for it;
* the writer retries network errors, 429 and 5xx up to ``max_attempts`` times,
  ``retry_interval`` apart (client-go: 12 tries, 10 s); other API errors are
  logged and the write is given up. A patch of an Event that no longer exists
  (Events expire on the server) re-creates it.

Thread-safety: every public method may be called from any thread. One lock
(``_cond``) guards the correlator, the buffer and the counters; sink calls run
on the writer thread without the lock.
"""

from __future__ import annotations

import enum
import logging
import threading
import time as _time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyinformers._exports import renamed_method
from pyinformers.api._errors import AlreadyExists, ApiError, NotFound
from pyinformers.api.meta import format_time, object_reference
from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.record._correlator import (
    DEFAULT_CACHE_SIZE,
    DEFAULT_MAX_SIMILAR,
    DEFAULT_WINDOW,
    CorrelationKey,
    EventCorrelator,
    EventRecord,
)
from pyinformers.record._events_v1 import DiscoveringSink, EventsV1Sink
from pyinformers.record._sink import EventSink, ResourceClientSink

__all__ = ["EventRecorder", "EventType", "RecorderStats"]

logger = logging.getLogger(__name__)

_MAX_NAME_LENGTH = 253
_DEFAULT_NAMESPACE = "default"


class EventType(str, enum.Enum):
    """The two Event types Kubernetes defines."""

    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True)
class RecorderStats:
    """Counters of one recorder since it was created."""

    #: occurrences accepted by :meth:`EventRecorder.event`
    recorded: int = 0
    #: occurrences that joined an existing Event (count > 1)
    aggregated: int = 0
    #: occurrences dropped because the buffer was full or the recorder closed
    dropped: int = 0
    #: successful writes (creates and patches) to the API server
    written: int = 0
    #: writes given up (non-retryable error, attempts exhausted, or abandoned at close)
    failed: int = 0


def rfc3339(epoch_seconds: float) -> str:
    """``2026-01-01T00:00:00Z``: the second-precision time format of core/v1 Events."""
    return format_time(int(epoch_seconds))


@dataclass(frozen=True)
class _Write:
    """A snapshot of one buffered Event, taken under the lock, written without it."""

    record: EventRecord
    created: bool
    message: str
    count: int
    first_timestamp: float
    last_timestamp: float
    object_resource_version: str


class EventRecorder:
    """Records ``core/v1`` Events about objects, asynchronously and aggregated.

    ``EventRecorder(api_client, "my-controller")`` writes through the given
    ``kubernetes.client.ApiClient``; ``sink=`` replaces the writer (tests).
    ``component`` and ``host`` fill the Events' ``source``.

    ``events_api`` chooses the API the Events are written to: ``"v1"``
    (``core/v1``, the default for now), ``"events.k8s.io/v1"`` (what
    controller-runtime writes: ``regarding``, ``note``, a ``series`` for
    repeats), or ``"auto"`` (``events.k8s.io/v1`` when the server serves
    it, found by one discovery request, else ``core/v1``). The correlator
    aggregates the same way whichever is chosen.

    The writer thread starts with the first event; call :meth:`close` (or use
    the recorder as a context manager) to write what is buffered and stop it.
    After ``close``, events are dropped (with a rate-limited warning).

    Timeouts of :meth:`flush` and :meth:`close` are real seconds (they bound
    how long the caller blocks); the retry delay and the aggregation window
    are measured on ``clock``, so tests drive them with a ``FakeClock``.
    """

    def __init__(
        self,
        api_client: Any,
        component: str,
        *,
        host: str | None = None,
        clock: Clock | None = None,
        buffer_size: int = 1000,
        sink: EventSink | None = None,
        window: float = DEFAULT_WINDOW,
        cache_size: int = DEFAULT_CACHE_SIZE,
        max_similar: int = DEFAULT_MAX_SIMILAR,
        max_attempts: int = 12,
        retry_interval: float = 10.0,
        warn_interval: float = 10.0,
        events_api: str = "v1",
    ) -> None:
        if not isinstance(component, str) or not component:
            raise ValueError("component must be a non-empty string (it names the Events' source)")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1, got {buffer_size!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts!r}")
        if retry_interval < 0:
            raise ValueError(f"retry_interval must be >= 0, got {retry_interval!r}")
        if sink is None:
            if api_client is None:
                raise ValueError("EventRecorder needs an api_client (or a sink)")
            if events_api == "v1":
                sink = ResourceClientSink(api_client)
            elif events_api == "events.k8s.io/v1":
                sink = EventsV1Sink(api_client, instance=host)
            elif events_api == "auto":
                sink = DiscoveringSink(api_client, instance=host)
            else:
                raise ValueError(
                    f"events_api must be 'v1', 'events.k8s.io/v1' or 'auto', got {events_api!r}"
                )
        self._sink = sink
        self.component = component
        self.host = host or ""
        self._clock: Clock = clock or REAL_CLOCK
        self._buffer_size = buffer_size
        self._max_attempts = max_attempts
        self._retry_interval = retry_interval
        self._warn_interval = warn_interval

        self._cond = threading.Condition(threading.Lock())
        self._last_unique = 0
        self._correlator = EventCorrelator(
            name_func=self._event_name,
            window=window,
            cache_size=cache_size,
            max_similar=max_similar,
        )
        # Events waiting to be written, oldest first, keyed by (namespace, event name).
        # Invariant: len(_pending) <= _buffer_size; a record is in _pending at most once.
        self._pending: OrderedDict[tuple[str, str], EventRecord] = OrderedDict()
        self._in_flight = 0  # 0 or 1: the writer holds a record outside _pending
        self._closed = False  # no new events accepted
        self._abandon = threading.Event()  # the writer must stop now, buffered or not
        # The writer's wait before a retry: a clock timer sets it, and so does close().
        self._retry_wake: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._recorded = self._aggregated = self._dropped = self._written = self._failed = 0
        self._dropped_unreported = 0
        self._last_warning: float | None = None

    # -- recording --------------------------------------------------------------------
    def event(self, obj: Mapping, type: str | EventType, reason: str, message: str) -> None:
        """Record that ``reason``/``message`` happened to ``obj`` (a dict with ``metadata``).

        Returns at once. Raises :class:`ValueError` for a type other than
        ``Normal``/``Warning``, an empty reason, a non-string message, or an
        ``obj`` without ``kind``, ``apiVersion`` and ``metadata.name``.
        """
        event_type = _event_type(type)
        if not isinstance(reason, str) or not reason:
            raise ValueError("an event needs a non-empty reason (a CamelCase word, e.g. 'Synced')")
        if not isinstance(message, str):
            raise ValueError(f"an event message must be a string, got {message.__class__.__name__}")
        reference = object_reference(obj)
        key = CorrelationKey(
            component=self.component,
            host=self.host,
            api_version=reference["apiVersion"],
            kind=reference["kind"],
            namespace=reference.get("namespace", ""),
            name=reference["name"],
            uid=reference.get("uid", ""),
            type=event_type.value,
            reason=reason,
            message=message,
        )
        logger.debug(
            "event(%s %s/%s): %s %s: %s",
            key.kind,
            key.namespace,
            key.name,
            key.type,
            reason,
            message,
        )
        with self._cond:
            if self._closed:
                self._drop_locked("the recorder is closed")
                return
            record, previous = self._correlator.observe(
                key,
                namespace=key.namespace or _DEFAULT_NAMESPACE,
                now=self._clock.now(),
                wall=self._clock.time(),
                object_resource_version=reference.get("resourceVersion", ""),
            )
            slot = (record.event_namespace, record.event_name)
            if slot not in self._pending:
                if len(self._pending) >= self._buffer_size:
                    if previous is None:
                        # Never buffered, never written: forget it entirely, so the next
                        # occurrence starts a fresh Event rather than patching a missing one.
                        # (An occurrence of an Event that exists keeps its count: the next
                        # write of that Event includes it.)
                        self._correlator.undo(record, previous)
                    self._drop_locked(f"the buffer is full ({self._buffer_size} events waiting)")
                    return
                self._pending[slot] = record
                self._cond.notify_all()
            self._recorded += 1
            if previous is not None:
                self._aggregated += 1
            self._ensure_writer_locked()

    def eventf(
        self, obj: Mapping, type: str | EventType, reason: str, fmt: str, *args: Any
    ) -> None:
        """:meth:`event` with ``message = fmt % args`` (printf style, like Go's ``Eventf``)."""
        if not isinstance(fmt, str):
            raise ValueError(f"an event format must be a string, got {fmt.__class__.__name__}")
        try:
            message = fmt % args if args else fmt
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"cannot format event message {fmt!r} with {args!r}: {exc}") from None
        self.event(obj, type, reason, message)

    # -- waiting and stopping ---------------------------------------------------------
    def flush(self, timeout: float | None = 10.0) -> bool:
        """Block until every buffered Event was written (or given up); False on timeout."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        with self._cond:
            while self._pending or self._in_flight:
                if self._thread is None or not self._thread.is_alive():
                    return False  # nobody left to write them
                if deadline is None:
                    self._cond.wait()
                    continue
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def stop(self, timeout: float | None = 10.0) -> bool:
        """Stop accepting events, write what is buffered within ``timeout``, stop the writer.

        Returns True when everything buffered was written (or given up for a
        non-retryable error) in time; False when some was abandoned (logged).
        Idempotent.
        """
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        drained = self.flush(timeout) if thread is not None else True
        with self._cond:
            lost = len(self._pending) + self._in_flight
            self._abandon.set()
            if self._retry_wake is not None:
                self._retry_wake.set()
            self._cond.notify_all()
        if lost:
            logger.warning(
                "event recorder %r: closed with %d event(s) not written", self.component, lost
            )
        if thread is not None:
            thread.join(5.0)
        return drained and not lost

    close = renamed_method(stop, "close")

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- observing --------------------------------------------------------------------
    @property
    def stats(self) -> RecorderStats:
        with self._cond:
            return RecorderStats(
                recorded=self._recorded,
                aggregated=self._aggregated,
                dropped=self._dropped,
                written=self._written,
                failed=self._failed,
            )

    def __len__(self) -> int:
        """Events waiting to be written (including the one being written)."""
        with self._cond:
            return len(self._pending) + self._in_flight

    def __repr__(self) -> str:
        with self._cond:
            state = "closed" if self._closed else "open"
            return (
                f"<EventRecorder {self.component!r} {state} pending={len(self._pending) + self._in_flight}"
                f" written={self._written} dropped={self._dropped} failed={self._failed}>"
            )

    # -- internals (lock held) --------------------------------------------------------
    def _event_name(self, object_name: str) -> str:
        """``<object name>.<hex nanoseconds>``, unique within this recorder (called locked)."""
        unique = max(int(self._clock.time() * 1e9), self._last_unique + 1)
        self._last_unique = unique
        suffix = f".{unique:x}"
        return object_name[: _MAX_NAME_LENGTH - len(suffix)] + suffix

    def _drop_locked(self, why: str) -> None:
        self._dropped += 1
        self._dropped_unreported += 1
        now = self._clock.now()
        if self._last_warning is None or now - self._last_warning >= self._warn_interval:
            logger.warning(
                "event recorder %r: dropped %d event(s): %s",
                self.component,
                self._dropped_unreported,
                why,
            )
            self._dropped_unreported = 0
            self._last_warning = now

    def _ensure_writer_locked(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"pyinformers-recorder-{self.component}", daemon=True
            )
            self._thread.start()

    # -- the writer thread ------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed and not self._abandon.is_set():
                    self._cond.wait()
                if self._abandon.is_set() or not self._pending:
                    return  # abandoned, or closed and drained
                _, record = self._pending.popitem(last=False)
                write = _Write(
                    record=record,
                    created=record.created,
                    message=record.message,
                    count=record.count,
                    first_timestamp=record.first_timestamp,
                    last_timestamp=record.last_timestamp,
                    object_resource_version=record.object_resource_version,
                )
                self._in_flight = 1
            ok = False
            try:
                ok = self._write(write)
            except Exception:  # never let the writer die: a bug here must not lose later events
                logger.exception(
                    "event recorder %r: unexpected error writing an event", self.component
                )
            finally:
                with self._cond:
                    self._in_flight = 0
                    if ok:
                        self._written += 1
                    else:
                        self._failed += 1
                    self._cond.notify_all()

    def _write(self, write: _Write) -> bool:
        """Create or patch one Event, retrying transient failures. True when written."""
        record = write.record
        created = write.created
        for attempt in range(1, self._max_attempts + 1):
            try:
                if created:
                    try:
                        self._sink.patch(
                            record.event_name, record.event_namespace, self._patch_body(write)
                        )
                    except NotFound:
                        # The Event expired on the server: write it again, whole.
                        self._sink.create(self._event_body(write), record.event_namespace)
                else:
                    try:
                        self._sink.create(self._event_body(write), record.event_namespace)
                    except AlreadyExists:
                        # An earlier create reached the server but its answer was lost.
                        self._sink.patch(
                            record.event_name, record.event_namespace, self._patch_body(write)
                        )
                with self._cond:
                    record.created = True
                return True
            except ApiError as exc:
                if not (exc.code == 429 or exc.code >= 500):
                    logger.warning(
                        "event recorder %r: server rejected event %s/%s (will not retry): %s",
                        self.component,
                        record.event_namespace,
                        record.event_name,
                        exc,
                    )
                    return False
                error: BaseException = exc
            except Exception as exc:  # network failure: the server may be back soon
                error = exc
            if attempt == self._max_attempts:
                logger.warning(
                    "event recorder %r: giving up on event %s/%s after %d attempts: %s",
                    self.component,
                    record.event_namespace,
                    record.event_name,
                    attempt,
                    error,
                )
                return False
            logger.info(
                "event recorder %r: writing event %s/%s failed (attempt %d of %d), retrying in %ss: %s",
                self.component,
                record.event_namespace,
                record.event_name,
                attempt,
                self._max_attempts,
                self._retry_interval,
                error,
            )
            if self._wait_before_retry():
                return False  # closing: stop retrying
        return False

    def _wait_before_retry(self) -> bool:
        """Wait ``retry_interval`` on the clock (a timer: a fake clock fires it in ``step``); True if abandoned."""
        wake = threading.Event()
        with self._cond:
            if self._abandon.is_set():
                return True
            self._retry_wake = wake
        timer = self._clock.call_later(self._retry_interval, wake.set)
        try:
            wake.wait()
        finally:
            timer.cancel()
            with self._cond:
                self._retry_wake = None
        return self._abandon.is_set()

    def _event_body(self, write: _Write) -> dict:
        key = write.record.key
        involved: dict[str, str] = {
            "apiVersion": key.api_version,
            "kind": key.kind,
            "name": key.name,
        }
        if key.namespace:
            involved["namespace"] = key.namespace
        if key.uid:
            involved["uid"] = key.uid
        if write.object_resource_version:
            involved["resourceVersion"] = write.object_resource_version
        source = {"component": key.component}
        if key.host:
            source["host"] = key.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": write.record.event_name,
                "namespace": write.record.event_namespace,
            },
            "involvedObject": involved,
            "reason": key.reason,
            "message": write.message,
            "type": key.type,
            "source": source,
            "count": write.count,
            "firstTimestamp": rfc3339(write.first_timestamp),
            "lastTimestamp": rfc3339(write.last_timestamp),
            "reportingComponent": key.component,
            "reportingInstance": key.host,
        }

    @staticmethod
    def _patch_body(write: _Write) -> dict:
        return {
            "count": write.count,
            "lastTimestamp": rfc3339(write.last_timestamp),
            "message": write.message,
        }


def _event_type(value: str | EventType) -> EventType:
    try:
        return EventType(value)
    except ValueError:
        raise ValueError(f"event type must be 'Normal' or 'Warning', got {value!r}") from None
