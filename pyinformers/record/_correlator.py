"""Correlating events: identical ones into one Event with a growing ``count``, similar ones combined.

A controller that fails the same way on every retry would otherwise write a
new Event per attempt. Like client-go's event correlator (``tools/record``),
two mechanisms keep the number of Events bounded:

* **identical events** -- same source, involved object, type, reason and
  message -- seen again less than ``window`` seconds after the last
  occurrence update the existing Event (``count`` + 1, ``lastTimestamp``)
  instead of creating another one;
* **similar events** -- same source, object, type and reason, different
  messages (a message with a changing number in it) -- are written as they
  are for the first ``max_similar - 1`` distinct messages within the window;
  from the ``max_similar``-th on they are combined into one Event whose
  message is ``(combined from similar events): <latest message>`` and whose
  count grows.

The correlator is pure bookkeeping: it decides *which* Event an occurrence
belongs to and what its count is; it performs no I/O. It is not thread-safe
on its own: the :class:`~pyinformers.record._recorder.EventRecorder` calls it
under its lock.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "COMBINED_PREFIX",
    "CorrelationKey",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_MAX_SIMILAR",
    "DEFAULT_WINDOW",
    "EventCorrelator",
    "EventRecord",
]

#: Identical events closer together than this (seconds) aggregate into one Event.
DEFAULT_WINDOW = 600.0
#: How many distinct events the correlator remembers (least recently seen evicted first).
DEFAULT_CACHE_SIZE = 4096
#: The distinct message of a (source, object, type, reason) from which on events are combined.
DEFAULT_MAX_SIMILAR = 10
#: The message prefix of an Event that combines similar events.
COMBINED_PREFIX = "(combined from similar events): "


@dataclass(frozen=True, slots=True)
class CorrelationKey:
    """What makes two events identical (client-go's ``getEventKey``)."""

    component: str
    host: str
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str
    #: True for the key of an Event combining similar events (``message`` is then "").
    combined: bool = False


@dataclass(slots=True)
class _Similar:
    """The distinct messages one (source, object, type, reason) had in the current window.

    A tuple, not a set: it holds at most ``max_similar`` (10) messages and
    mostly one, where a set would cost 216 bytes per group.
    """

    messages: tuple[str, ...]
    last_seen: float


@dataclass(slots=True)
class EventRecord:
    """The Event one correlation key currently aggregates into.

    Mutable, owned by the correlator; callers read it under the recorder's lock.

    Invariants: ``count >= 1``; ``first_timestamp <= last_timestamp`` (wall seconds);
    ``event_name`` never changes for a record (a new window means a new record).
    """

    key: CorrelationKey
    event_name: str
    event_namespace: str
    #: The message to write: the key's message, or the latest combined one.
    message: str
    count: int
    first_timestamp: float
    last_timestamp: float
    last_seen: float  # monotonic clock seconds, decides the window
    #: True once the Event was created on the server (later occurrences patch it).
    created: bool = False
    #: The resourceVersion of the involved object at the latest occurrence.
    object_resource_version: str = ""


class EventCorrelator:
    """Maps each occurrence of an event to the :class:`EventRecord` it aggregates into.

    ``observe`` either starts a fresh record (count 1, a new Event name) or, when
    the same key was seen within ``window`` seconds, bumps the existing record.
    Remembers at most ``cache_size`` keys (and as many similarity groups),
    evicting the least recently seen.
    """

    def __init__(
        self,
        *,
        name_func: Callable[[str], str],
        window: float = DEFAULT_WINDOW,
        cache_size: int = DEFAULT_CACHE_SIZE,
        max_similar: int = DEFAULT_MAX_SIMILAR,
    ) -> None:
        if window < 0:
            raise ValueError(f"window must be >= 0 seconds, got {window!r}")
        if cache_size < 1:
            raise ValueError(f"cache_size must be >= 1, got {cache_size!r}")
        if max_similar < 1:
            raise ValueError(f"max_similar must be >= 1, got {max_similar!r}")
        self._name_func = name_func
        self._window = window
        self._cache_size = cache_size
        self._max_similar = max_similar
        # least recently seen first
        self._records: OrderedDict[CorrelationKey, EventRecord] = OrderedDict()
        # keyed like _records but with message "" (one group per source/object/type/reason)
        self._similar: OrderedDict[CorrelationKey, _Similar] = OrderedDict()

    def _combine(self, key: CorrelationKey, now: float) -> tuple[CorrelationKey, str]:
        """The key and message an occurrence is recorded under, after similar-event combining."""
        group_key = dataclasses.replace(key, message="")
        group = self._similar.get(group_key)
        if group is None or now - group.last_seen > self._window:
            group = self._similar[group_key] = _Similar(messages=(), last_seen=now)
        group.last_seen = now
        self._similar.move_to_end(group_key)
        while len(self._similar) > self._cache_size:
            self._similar.popitem(last=False)
        # bounded: later messages need not be told apart
        if len(group.messages) < self._max_similar and key.message not in group.messages:
            group.messages += (key.message,)
        if len(group.messages) < self._max_similar:
            return key, key.message
        return dataclasses.replace(group_key, combined=True), COMBINED_PREFIX + key.message

    def observe(
        self,
        key: CorrelationKey,
        *,
        namespace: str,
        now: float,
        wall: float,
        object_resource_version: str = "",
    ) -> tuple[EventRecord, EventRecord | None]:
        """Record one occurrence of ``key``; return ``(record, previous)``.

        ``previous`` is the record's state before this occurrence (a copy), or
        None when the occurrence started a new record. The recorder uses it to
        undo the occurrence if it cannot be buffered.
        """
        key, message = self._combine(key, now)
        record = self._records.get(key)
        if record is not None and now - record.last_seen <= self._window:
            previous = dataclasses.replace(record)
            record.message = message
            record.count += 1
            record.last_timestamp = max(record.last_timestamp, wall)
            record.last_seen = now
            record.object_resource_version = object_resource_version
            self._records.move_to_end(key)
            return record, previous
        record = EventRecord(
            key=key,
            event_name=self._name_func(key.name),
            event_namespace=namespace,
            message=message,
            count=1,
            first_timestamp=wall,
            last_timestamp=wall,
            last_seen=now,
            object_resource_version=object_resource_version,
        )
        self._records[key] = record
        self._records.move_to_end(key)
        while len(self._records) > self._cache_size:
            self._records.popitem(last=False)
        return record, None

    def undo(self, record: EventRecord, previous: EventRecord | None) -> None:
        """Forget the occurrence that ``observe`` just returned (it was dropped)."""
        if previous is None:
            if self._records.get(record.key) is record:
                del self._records[record.key]
            return
        # The record object is shared with the write path: restore it in place.
        record.message = previous.message
        record.count = previous.count
        record.last_timestamp = previous.last_timestamp
        record.last_seen = previous.last_seen
        record.object_resource_version = previous.object_resource_version

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"<EventCorrelator records={len(self._records)} window={self._window}s>"
