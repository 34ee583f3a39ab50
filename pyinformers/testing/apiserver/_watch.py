"""Watch fan-out for the in-process API server.

The :class:`WatchHub` listens to the store: for every change it appends the
change to the queue of each open :class:`Watcher` of that resource (and
namespace). The store calls the hub under its lock, so every watcher's queue
receives changes in resourceVersion order, and a watcher registered under that
lock (after reading its starting state or replaying history) misses nothing
and sees nothing twice.

Each watcher's queue is bounded (``max_queue``): a watcher that falls that far
behind is closed with reason ``"overflow"`` -- the real API server likewise
terminates watchers that cannot keep up -- so a slow or stalled client never
makes writers wait or the server's memory grow without bound. The client then
re-watches from the last resourceVersion it saw.

The serving thread of a watch (in the HTTP layer) takes changes in batches
with :meth:`Watcher.next_batch` and turns them into JSON lines with
:meth:`Watcher.encode`, which applies the label and field selectors: an object
that starts matching is sent as ADDED, one that stops matching as DELETED.

Lock order: the store lock, then a watcher's condition. The serving thread
never holds its watcher's condition while taking the store lock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.testing.apiserver._field_selection import selectable
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._status import expired
from pyinformers.testing.apiserver._storage import Change, ChangeType, Store, event_line

__all__ = ["Watcher", "WatchHub", "INITIAL_EVENTS_END"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class Watcher:
    """One open watch: a bounded queue of changes plus the filter to apply.

    ``label_selector`` and ``field_selector`` are objects with a
    ``matches(...)`` method (``pyinformers.api._selectors``) or None.
    """

    def __init__(
        self,
        resource: ResourceType,
        namespace: str | None,
        *,
        label_selector: Any = None,
        field_selector: Any = None,
        max_queue: int = 10_000,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.max_queue = max_queue
        self.start_rv = 0
        self.events_sent = 0
        #: set by the dispatcher for a metadata-only watch: the object each event carries, from the stored one
        self.transform: Callable[[dict], dict] | None = None
        self.close_reason: str | None = None
        #: converts an object of another version to this watch's (a CRD's conversion webhook); None: relabel
        self.convert: Callable[[dict], dict] | None = None
        # set by finish(): the reason to close with once the queued changes are taken; guarded by _cond
        self._finishing: str | None = None
        self._cond = threading.Condition(threading.Lock())
        # Changes not yet taken by the serving thread: first the replay from history
        # (already in memory, not bounded here), then live changes (bounded by max_queue).
        self._backlog: list[Change] = []
        self._queue: deque[Change] = deque()

    def __repr__(self) -> str:
        where = f" namespace={self.namespace}" if self.namespace else ""
        return (
            f"<Watcher {self.resource}{where} queued={len(self._queue)} sent={self.events_sent} "
            f"closed={self.close_reason!r}>"
        )

    @property
    def closed(self) -> bool:
        return self.close_reason is not None

    def offer(self, change: Change) -> None:
        """Queue a change (called by the hub under the store lock); closes the watcher on overflow."""
        if change.rv <= self.start_rv:
            return  # before this watch's starting point (a watch from a resourceVersion not reached yet)
        with self._cond:
            if self.close_reason is not None:
                return
            if len(self._queue) >= self.max_queue:
                self.close_reason = "overflow"
                self._queue.clear()
                self._backlog = []
            else:
                self._queue.append(change)
            self._cond.notify()

    def replay(self, changes: list[Change]) -> None:
        """Queue a replay from history (called by the hub under the store lock, before any live change)."""
        with self._cond:
            self._backlog = list(changes)
            self._cond.notify()

    def finish(self, reason: str) -> None:
        """End the watch with ``reason`` once the changes already queued are taken (a close wins). Any thread."""
        with self._cond:
            if self.close_reason is None and self._finishing is None:
                self._finishing = reason
            self._cond.notify_all()

    def close(self, reason: str) -> None:
        """End the watch (idempotent; the first reason wins). Safe from any thread."""
        with self._cond:
            if self.close_reason is None:
                self.close_reason = reason
            self._cond.notify_all()

    def next_batch(self, timeout: float, clock: Clock = REAL_CLOCK) -> list[Change] | None:
        """Wait up to ``timeout`` s (of ``clock``) for changes; returns them (maybe empty), or None once closed."""
        with self._cond:
            idle = not self._queue and not self._backlog
            if idle and self.close_reason is None and self._finishing is None and timeout > 0:
                clock.wait(self._cond, timeout)
            if self.close_reason is not None:
                return None
            batch = self._backlog
            self._backlog = []
            batch.extend(self._queue)
            self._queue.clear()
            if not batch and self._finishing is not None:
                self.close_reason = self._finishing
                return None
            return batch

    def is_drained(self) -> bool:
        with self._cond:
            return not self._queue and not self._backlog

    # -- encoding ------------------------------------------------------------------------

    def matches(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        if self.label_selector is not None and not self.label_selector.matches(
            (obj.get("metadata") or {}).get("labels")
        ):
            return False
        if self.field_selector is not None and not self.field_selector.matches(
            selectable(self.resource.storage_key, obj, self.field_selector)
        ):
            return False
        return True

    def _line(self, event_type: str, obj: dict, change: Change | None = None) -> bytes:
        """The event line for ``obj`` as seen through this watch's version (reusing the change's line if it fits)."""
        if self.transform is not None:
            return event_line(event_type, orjson.dumps(self.transform(obj)))
        if obj.get("apiVersion") != self.resource.api_version:
            if self.convert is not None:
                return event_line(event_type, orjson.dumps(self.convert(obj)))
            return event_line(
                event_type, orjson.dumps(dict(obj, apiVersion=self.resource.api_version))
            )
        if change is not None:
            if change.type.value == event_type:
                return change.line
            return event_line(event_type, change.raw)
        return event_line(event_type, orjson.dumps(obj))

    def encode(self, changes: list[Change]) -> list[bytes]:
        """The JSON lines for a batch of changes, after the selectors."""
        lines = []
        version = self.resource.api_version
        if self.label_selector is None and self.field_selector is None and self.transform is None:
            for change in changes:
                if change.obj.get("apiVersion") == version:
                    lines.append(change.line)  # encoded once at write time, shared by every watcher
                else:
                    lines.append(self._line(change.type.value, change.obj))
            self.events_sent += len(lines)
            return lines
        for change in changes:
            now = self.matches(change.obj)
            if change.type is ChangeType.MODIFIED:
                before = self.matches(change.prev)
                if now and before:
                    lines.append(self._line("MODIFIED", change.obj, change))
                elif now:
                    lines.append(self._line("ADDED", change.obj, change))
                elif before:
                    # It stopped matching: the client must forget it. Send its previous
                    # state, at this change's resourceVersion, as the real server does.
                    prev = dict(change.prev or {})
                    prev["metadata"] = dict(
                        prev.get("metadata") or {}, resourceVersion=str(change.rv)
                    )
                    lines.append(self._line("DELETED", prev))
            elif now:
                lines.append(self._line(change.type.value, change.obj, change))
        self.events_sent += len(lines)
        return lines

    def encode_objects(self, objects: list[dict]) -> list[bytes]:
        """ADDED lines for a starting state (after the selectors)."""
        lines = [self._line("ADDED", obj) for obj in objects if self.matches(obj)]
        self.events_sent += len(lines)
        return lines

    def bookmark_line(self, rv: int, *, initial_events_end: bool = False) -> bytes:
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {
            "kind": self.resource.kind,
            "apiVersion": self.resource.api_version,
            "metadata": metadata,
        }
        if self.transform is not None:
            obj = self.transform(obj)
        return event_line("BOOKMARK", orjson.dumps(obj))


class WatchHub:
    """Routes the store's changes to open watchers. Thread-safe (under the store lock)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._watchers: dict[str, list[Watcher]] = {}  # storage key -> open watchers
        # The watch caches: where each resource's cache starts (a watch from before it
        # gets 410 Expired) and the rv of its latest change (what bookmarks carry).
        self._epoch = store.current_rv
        self._cache_start: dict[str, int] = {}
        self._latest: dict[str, int] = {}
        store.add_listener(self._on_change)

    def __repr__(self) -> str:
        return f"<WatchHub watchers={self.count()}>"

    def _on_change(self, change: Change) -> None:
        self._latest[change.storage_key] = change.rv
        for watcher in self._watchers.get(change.storage_key, ()):
            if watcher.namespace is None or watcher.namespace == change.namespace:
                watcher.offer(change)

    def open(
        self, watcher: Watcher, *, since_rv: int | None, initial_state: bool
    ) -> tuple[list[dict], int]:
        """Register a watcher atomically with its starting point.

        With ``initial_state`` returns the current objects (to be sent as ADDED)
        and their rv; otherwise queues every change after ``since_rv`` from
        history (410 Expired if compacted) and returns ``([], since_rv)``, or
        with ``since_rv=None`` starts from the current rv: ``([], current)``.
        """
        key = watcher.resource.storage_key
        with self._store.lock:
            if initial_state:
                objects, rv = self._store.snapshot(key, watcher.namespace)
            elif since_rv is None:
                objects, rv = [], self._store.current_rv
            else:
                start = self._cache_start.get(key, self._epoch)
                if since_rv < start:
                    raise expired(f"too old resource version: {since_rv} ({start})")
                backlog = self._store.changes_since(since_rv, key)
                watcher.replay(
                    [
                        c
                        for c in backlog
                        if watcher.namespace is None or watcher.namespace == c.namespace
                    ]
                )
                objects, rv = [], since_rv
            watcher.start_rv = rv
            self._watchers.setdefault(key, []).append(watcher)
        return objects, rv

    def finish_resource(self, storage_key: str, reason: str) -> int:
        """End every watch of a resource that stops being served, once each has sent what it queued.

        The watchers get no later change (a resource created again under the
        same name is a new one). Returns how many watches are ending.
        """
        with self._store.lock:
            watchers = self._watchers.pop(storage_key, [])
        for watcher in watchers:
            watcher.finish(reason)
        return len(watchers)

    def close(self, watcher: Watcher, reason: str = "closed") -> None:
        watcher.close(reason)
        with self._store.lock:
            watchers = self._watchers.get(watcher.resource.storage_key)
            if watchers and watcher in watchers:
                watchers.remove(watcher)

    def bookmark_rv(self, watcher: Watcher) -> int | None:
        """The rv a bookmark may carry now, or None when none is due.

        That is the rv of the resource's latest change (whether or not the
        watch's selectors let it through), once every change up to it was
        delivered; a watch that has seen nothing newer than its start gets
        no bookmark, as from the real server.
        """
        with self._store.lock:
            if not watcher.is_drained():
                return None
            rv = self._latest.get(watcher.resource.storage_key, 0)
            return rv if rv > watcher.start_rv else None

    def start_cache(self, storage_key: str) -> None:
        """A resource starts being served (a CRD was created): its watch cache starts now."""
        with self._store.lock:
            self._cache_start[storage_key] = self._store.current_rv

    def restart(self) -> int:
        """What a kube-apiserver restart does to watches: end each cleanly; every cache starts anew.

        Returns how many watches were ended.
        """
        with self._store.lock:
            self._epoch = self._store.current_rv
            self._cache_start.clear()
        return self.close_all("restart")

    @property
    def epoch(self) -> int:
        """The resourceVersion at which the watch caches last started (the last restart)."""
        with self._store.lock:
            return self._epoch

    def watchers(self) -> list[Watcher]:
        with self._store.lock:
            return [w for ws in self._watchers.values() for w in ws]

    def count(self) -> int:
        with self._store.lock:
            return sum(len(ws) for ws in self._watchers.values())

    def close_all(self, reason: str) -> int:
        watchers = self.watchers()
        for watcher in watchers:
            self.close(watcher, reason)
        return len(watchers)
