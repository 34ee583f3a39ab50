"""Storage of the in-process API server: objects, one resourceVersion, history.

This is the server's etcd. It holds every object as a plain dict, keyed by
storage key (``group/plural``), namespace (``""`` for cluster-scoped) and name,
and owns the one global resourceVersion counter: every write to any resource
takes the next integer, so resourceVersions are totally ordered across
resources, as with etcd's revision.

Every write produces a :class:`Change` that is

* appended to a bounded **history** (for watches that resume from a
  resourceVersion and for lists served "as of" a resourceVersion, the way
  continue tokens need them), and
* handed, in resourceVersion order and while the store lock is held, to the
  store's **listeners** (the watch fan-out, the garbage collector, the workload
  simulator). Listeners must be quick and must never block.

History is kept back to a **compaction point**: a resourceVersion ``C`` such
that every change with ``rv > C`` is still held. :meth:`Store.compact` moves it
explicitly; with ``compact_every=N`` the store compacts every N writes to the
resourceVersion it had reached at the previous automatic compaction (so between
N and 2N changes stay available); the history is also capped at
``history_limit`` changes. Reading history from before the compaction point
raises 410 ``Expired``.

Invariants:

* ``obj["metadata"]["resourceVersion"] == str(change.rv)`` for the object of
  each change, and for each stored object, the rv of its last change;
* stored objects are never mutated after they are stored (writers store fresh
  dicts), so readers may hand them out without copying as long as they do not
  mutate them either;
* history is strictly increasing in ``rv`` and contains every change with
  ``compacted_rv < rv <= current_rv``.

Paged lists read from a **list snapshot** (:meth:`Store.list_snapshot`): the
objects of one resource (and namespace) at one resourceVersion, sorted by list
key. Since a snapshot at a given rv never changes, the store keeps the most
recent few (a small LRU, dropped when compaction makes their rv unreadable),
so every page after the first of a paged list is a binary search and a slice
instead of a rebuild and a sort of the whole collection.

Thread-safety: one re-entrant lock (:attr:`Store.lock`) guards everything;
callers that must read and then write atomically (compare-and-swap updates)
hold it around both.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum

import orjson

from pyinformers.testing.apiserver._status import StatusError, expired

__all__ = ["ChangeType", "Change", "ListSnapshot", "Store", "ObjectKey", "event_line", "list_key"]

ObjectKey = tuple[str, str, str]  # (storage key, namespace, name)


class ChangeType(str, Enum):
    """The kind of a stored change (the watch event types of real changes)."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True)
class Change:
    """One write: the object after it (for DELETED: its last state, at the deletion's rv) and before it."""

    rv: int
    type: ChangeType
    storage_key: str
    namespace: str
    name: str
    obj: dict
    prev: dict | None
    line: bytes  # the watch event line for ``obj`` ({"type":...,"object":...}\n), encoded once for every watcher

    @property
    def raw(self) -> bytes:
        """The JSON encoding of ``obj`` (a slice of :attr:`line`)."""
        return self.line[len(self.type.value) + _LINE_OVERHEAD : -2]

    def __repr__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"<Change {self.rv} {self.type.value} {self.storage_key} {where}>"


Listener = Callable[[Change], None]

_LINE_OVERHEAD = len(b'{"type":"","object":')


def event_line(event_type: str, raw_object: bytes) -> bytes:
    """One watch event as a JSON line."""
    return b'{"type":"' + event_type.encode() + b'","object":' + raw_object + b"}\n"


_FIRST_RV = 100

#: How many list snapshots the store keeps for paged lists in progress.
LIST_SNAPSHOT_CACHE_SIZE = 16


def list_key(namespace: str, name: str) -> str:
    """The key lists are sorted by and continue tokens point at: ``ns/name``, or ``name``.

    These are byte-wise ordered strings, as etcd orders its keys; a continue
    token's ``start`` is compared with the same strings.
    """
    return f"{namespace}/{name}" if namespace else name


@dataclass(frozen=True)
class ListSnapshot:
    """The objects of one resource (and namespace) as of ``rv``, sorted by :func:`list_key`.

    ``keys[i]`` is the list key of ``objects[i]``; ``keys`` is strictly
    increasing. Shared between requests: treat both lists as read-only.
    """

    rv: int
    keys: list
    objects: list

    def __repr__(self) -> str:
        return f"<ListSnapshot rv={self.rv} objects={len(self.objects)}>"


def _owner_uids(obj: dict) -> list[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return [ref["uid"] for ref in refs if isinstance(ref, dict) and ref.get("uid")]


class Store:
    """All objects, the global resourceVersion, bounded history and listeners."""

    def __init__(self, *, history_limit: int = 100_000, compact_every: int | None = None) -> None:
        if history_limit < 1:
            raise ValueError("history_limit must be at least 1")
        if compact_every is not None and compact_every < 1:
            raise ValueError("compact_every must be a positive number of writes or None")
        self.lock = threading.RLock()
        self._history_limit = history_limit
        self._compact_every = compact_every
        # storage key -> (namespace, name) -> object
        self._objects: dict[str, dict[tuple[str, str], dict]] = {}
        self._rv = _FIRST_RV
        self._compacted = _FIRST_RV
        self._history: deque[Change] = deque()
        self._writes = 0
        self._auto_mark = _FIRST_RV
        self._listeners: list[Listener] = []
        # uid -> object key, and owner uid -> keys of objects whose ownerReferences name it
        self._by_uid: dict[str, ObjectKey] = {}
        self._dependents: dict[str, set[ObjectKey]] = {}
        # (storage key, namespace or None, rv) -> ListSnapshot, least recently used first
        self._list_snapshots: OrderedDict[tuple[str, str | None, int], ListSnapshot] = OrderedDict()

    def __repr__(self) -> str:
        with self.lock:
            count = sum(len(objs) for objs in self._objects.values())
            return (
                f"<Store objects={count} rv={self._rv} compacted={self._compacted} "
                f"history={len(self._history)} listeners={len(self._listeners)}>"
            )

    # -- listeners -------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(change)`` for every later write, under the store lock, in rv order."""
        with self.lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self.lock:
            try:
                self._listeners.remove(listener)
            except ValueError:
                pass

    # -- reads -----------------------------------------------------------------------

    @property
    def current_rv(self) -> int:
        with self.lock:
            return self._rv

    @property
    def compacted_rv(self) -> int:
        with self.lock:
            return self._compacted

    def get(self, storage_key: str, namespace: str, name: str) -> dict | None:
        with self.lock:
            return self._objects.get(storage_key, {}).get((namespace, name))

    def get_by_uid(self, uid: str) -> tuple[ObjectKey, dict] | None:
        with self.lock:
            key = self._by_uid.get(uid)
            if key is None:
                return None
            obj = self._objects.get(key[0], {}).get((key[1], key[2]))
            return (key, obj) if obj is not None else None

    def dependents(self, owner_uid: str) -> list[tuple[ObjectKey, dict]]:
        """Objects whose ``ownerReferences`` name ``owner_uid``."""
        with self.lock:
            result = []
            for key in self._dependents.get(owner_uid, ()):
                obj = self._objects.get(key[0], {}).get((key[1], key[2]))
                if obj is not None:
                    result.append((key, obj))
            return result

    def keys_in_namespace(self, namespace: str) -> list[ObjectKey]:
        with self.lock:
            return [
                (storage_key, ns, name)
                for storage_key, objs in self._objects.items()
                for (ns, name) in objs
                if ns == namespace
            ]

    def objects(self, storage_key: str, namespace: str | None = None) -> list[dict]:
        """The current objects of a resource, sorted by (namespace, name)."""
        return self.snapshot(storage_key, namespace)[0]

    def snapshot(
        self, storage_key: str, namespace: str | None = None, *, at_rv: int | None = None
    ) -> tuple[list[dict], int]:
        """The objects of a resource as of ``at_rv`` (default: now), sorted by (namespace, name).

        Returns ``(objects, rv)``. An ``at_rv`` older than the compaction point
        raises 410 Expired; one newer than the current rv raises 504
        (``ResourceVersionTooLarge``), as the real server does after waiting.
        """
        with self.lock:
            state, current = self._state_at(storage_key, namespace, at_rv)
        return [state[k] for k in sorted(state)], current

    def list_snapshot(
        self, storage_key: str, namespace: str | None = None, *, at_rv: int | None = None
    ) -> ListSnapshot:
        """The objects of a resource as of ``at_rv`` (default: now), sorted by :func:`list_key`.

        Raises as :meth:`snapshot` does. Snapshots are cached per
        (resource, namespace, rv), so the pages of one paged list share one
        sort; the cache holds the :data:`LIST_SNAPSHOT_CACHE_SIZE` most
        recently used and forgets those older than the compaction point.
        """
        with self.lock:
            rv = self._rv if at_rv is None else at_rv
            cache_key = (storage_key, namespace, rv)
            cached = self._list_snapshots.get(cache_key)
            if cached is not None and rv >= self._compacted:
                self._list_snapshots.move_to_end(cache_key)
                return cached
            state, rv = self._state_at(storage_key, namespace, at_rv)
            entries = sorted((list_key(ns, name), obj) for (ns, name), obj in state.items())
            snap = ListSnapshot(rv, [k for k, _ in entries], [o for _, o in entries])
            self._list_snapshots[cache_key] = snap
            if len(self._list_snapshots) > LIST_SNAPSHOT_CACHE_SIZE:
                self._list_snapshots.popitem(last=False)
            return snap

    def _state_at(
        self, storage_key: str, namespace: str | None, at_rv: int | None
    ) -> tuple[dict, int]:
        """``{(namespace, name): object}`` as of ``at_rv`` (lock held), and that rv."""
        current = self._rv
        objs = self._objects.get(storage_key, {})
        if namespace is None:
            state = dict(objs)
        else:
            state = {k: v for k, v in objs.items() if k[0] == namespace}
        if at_rv is not None and at_rv != current:
            if at_rv > current:
                raise StatusError(
                    504,
                    "Timeout",
                    f"Timeout: Too large resource version: {at_rv}, current: {current}",
                    details={
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
            if at_rv < self._compacted:
                raise expired("The resourceVersion for the provided list is too old.")
            for change in reversed(self._history):
                if change.rv <= at_rv:
                    break
                if change.storage_key != storage_key or (
                    namespace is not None and change.namespace != namespace
                ):
                    continue
                k = (change.namespace, change.name)
                if change.prev is None:
                    state.pop(k, None)
                else:
                    state[k] = change.prev
            current = at_rv
        return state, current

    def changes_since(self, rv: int, storage_key: str | None = None) -> list[Change]:
        """Every change with ``rv > rv`` (of one resource, if given), oldest first.

        Raises 410 Expired when ``rv`` is older than the compaction point.
        """
        with self.lock:
            if rv < self._compacted:
                raise expired(f"too old resource version: {rv} ({self._compacted})")
            result = []
            for change in reversed(self._history):
                if change.rv <= rv:
                    break
                if storage_key is None or change.storage_key == storage_key:
                    result.append(change)
            result.reverse()
            return result

    def iter_history(self) -> Iterator[Change]:
        """A snapshot of the retained history, oldest first."""
        with self.lock:
            return iter(list(self._history))

    # -- writes ----------------------------------------------------------------------

    def put(self, storage_key: str, namespace: str, name: str, obj: dict) -> dict:
        """Store ``obj`` (a fresh dict the store now owns) as a create or an update.

        Sets ``metadata.resourceVersion`` to the next rv and returns ``obj``.
        """
        with self.lock:
            objs = self._objects.setdefault(storage_key, {})
            prev = objs.get((namespace, name))
            rv = self._rv + 1
            obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
            objs[(namespace, name)] = obj
            key = (storage_key, namespace, name)
            if prev is not None:
                self._unindex(key, prev)
            self._index(key, obj)
            change_type = ChangeType.MODIFIED if prev is not None else ChangeType.ADDED
            self._commit(
                Change(
                    rv,
                    change_type,
                    storage_key,
                    namespace,
                    name,
                    obj,
                    prev,
                    event_line(change_type.value, orjson.dumps(obj)),
                )
            )
            return obj

    def remove(self, storage_key: str, namespace: str, name: str) -> dict | None:
        """Delete an object; returns its last state (at the deletion's rv), or None if absent."""
        with self.lock:
            objs = self._objects.get(storage_key, {})
            prev = objs.pop((namespace, name), None)
            if prev is None:
                return None
            rv = self._rv + 1
            final = dict(prev)
            final["metadata"] = dict(prev.get("metadata") or {}, resourceVersion=str(rv))
            self._unindex((storage_key, namespace, name), prev)
            self._commit(
                Change(
                    rv,
                    ChangeType.DELETED,
                    storage_key,
                    namespace,
                    name,
                    final,
                    prev,
                    event_line("DELETED", orjson.dumps(final)),
                )
            )
            return final

    def compact(self, rv: int | None = None) -> int:
        """Forget history up to ``rv`` (default: everything so far); returns the compaction point."""
        with self.lock:
            target = self._rv if rv is None else min(int(rv), self._rv)
            if target <= self._compacted:
                return self._compacted
            while self._history and self._history[0].rv <= target:
                self._history.popleft()
            self._compacted = target
            self._forget_list_snapshots()
            return target

    # -- internals -------------------------------------------------------------------

    def _commit(self, change: Change) -> None:
        self._rv = change.rv
        self._history.append(change)
        if len(self._history) > self._history_limit:
            self._compacted = self._history.popleft().rv
            if self._list_snapshots:
                self._forget_list_snapshots()
        self._writes += 1
        if self._compact_every and self._writes % self._compact_every == 0:
            self.compact(self._auto_mark)
            self._auto_mark = self._rv
        for listener in list(self._listeners):
            listener(change)

    def _forget_list_snapshots(self) -> None:
        """Drop cached list snapshots older than the compaction point (lock held)."""
        for cache_key in [
            k for k, snap in self._list_snapshots.items() if snap.rv < self._compacted
        ]:
            del self._list_snapshots[cache_key]

    def _index(self, key: ObjectKey, obj: dict) -> None:
        uid = (obj.get("metadata") or {}).get("uid")
        if uid:
            self._by_uid[uid] = key
        for owner in _owner_uids(obj):
            self._dependents.setdefault(owner, set()).add(key)

    def _unindex(self, key: ObjectKey, obj: dict) -> None:
        uid = (obj.get("metadata") or {}).get("uid")
        if uid and self._by_uid.get(uid) == key:
            del self._by_uid[uid]
        for owner in _owner_uids(obj):
            keys = self._dependents.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._dependents[owner]
