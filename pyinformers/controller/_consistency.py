"""Read your own writes: hold a key back until the cache has seen what its last reconcile wrote.

The problem. A reconcile writes an object (creates a child, updates its
status) and the server answers with the stored object at resourceVersion
*W*. The informer's cache hears of *W* only when the watch event arrives,
a few milliseconds later, or seconds later on a loaded cluster. If the key is
reconciled again before that (it was requeued, or another event came), the
reconcile reads the *old* object from the cache and acts on it: it creates
the child a second time (``AlreadyExists``), or writes the status over a
stale resourceVersion (``409 Conflict``), or worse, undoes its own work.
It is the most reported correctness problem of controller-runtime users;
client-go 1.36 gives kube-controller-manager's controllers the building
block (KEP-5647: compare the cache's resourceVersion with the one written)
and kopf waits for its own patch with ``consistency_timeout``.

What :class:`ConsistencyGuard` does. While a reconcile of key *K* runs, every
write accepted by the server through a pyinformers client on that thread is
reported to the guard (:mod:`pyinformers.api._observe`); the guard keeps,
for *K*, each written object's resource, key and resourceVersion. Before *K*
is reconciled again, :meth:`ConsistencyGuard.check` asks, for each recorded
write, whether the informer that caches that resource has caught up:

* the cached object's resourceVersion is *W* or newer; or
* the object is not in the cache, and either the write was a delete, or the
  informer has seen a version at or beyond *W* (the object came and went).

If every write is caught up (or was made to a resource the controller does
not cache: no cache, no stale read), the records are dropped and the
reconcile runs. Otherwise the key is *deferred*: put back with a short
delay (50 ms doubling to 1 s) without calling reconcile, without growing its
error backoff. A deferral lasts at most ``timeout`` seconds from the write
(default 10): then the reconcile runs anyway, the records are dropped, and
the timeout is logged and counted -- a watch that is that far behind is an
incident to see, not a reason to stop.

Bounds: at most ``max_keys`` keys are tracked (the oldest are dropped first,
counted as evictions); records older than ``timeout`` are dropped when
newer ones arrive. resourceVersions are compared as integers, which the API
documents for kube-apiserver (KEP-5504); a resourceVersion that is not one
(another storage) never defers (fail open).

Hand-overs. Records are per key in one process. A key this replica stops
owning (its shard moved, leadership ended) has its records dropped when the
admission refuses it (:meth:`forget`), so a key that comes back later is not
held by stale records. What a *previous* owner wrote is not known here; see
docs/ha.rst for what the Manager does when it takes keys over.

Threading: every method may be called from any thread; one lock guards the
records. ``check`` of a key with no records is a dict lookup under the lock.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyinformers.api.meta import object_key
from pyinformers.clock import REAL_CLOCK, Clock

__all__ = ["ConsistencyGuard", "ConsistencyStats", "DEFAULT_CONSISTENCY_TIMEOUT"]

#: Longest a key is held back waiting for the cache to show its own write (seconds).
DEFAULT_CONSISTENCY_TIMEOUT = 10.0
#: How many keys with pending writes are remembered at most.
DEFAULT_MAX_KEYS = 10_000

_FIRST_DELAY = 0.05
_MAX_DELAY = 1.0


@dataclass
class ConsistencyStats:
    """Counts since the guard was made: ``recorded`` writes, ``deferred`` reconciles,
    ``timeouts`` (ran although the cache had not caught up), ``evicted`` keys
    (over ``max_keys``), and ``tracked`` keys right now."""

    recorded: int = 0
    deferred: int = 0
    timeouts: int = 0
    evicted: int = 0
    tracked: int = 0


class _Pending:
    """The writes of one key's last reconciles not yet seen in the cache."""

    __slots__ = ("since", "deferrals", "writes")

    def __init__(self, since: float) -> None:
        self.since = since  # clock time of the oldest write recorded here
        self.deferrals = 0
        # (group, plural, object key) -> (resourceVersion as int, was a delete)
        self.writes: dict[tuple[str, str, str], tuple[int, bool]] = {}


def _rv(value: Any) -> int | None:
    if type(value) is str and value.isdigit():
        return int(value)
    return None


class ConsistencyGuard:
    """Per key, the resourceVersions its reconciles wrote; :meth:`check` says whether the cache has them.

    :param informers: the informers the controller reads (each with an
        ``indexer``, and a ``lister.resource`` or ``resource`` naming what it
        caches); a write to a
        resource none of them caches is not tracked.
    :param clock: measures ``timeout`` and the deferral delays (the queue's clock).
    :param timeout: the longest a key is deferred after a write (seconds, > 0).
    :param max_keys: the most keys tracked at once (>= 1).
    """

    def __init__(
        self,
        informers: Iterable[Any] = (),
        *,
        clock: Clock | None = None,
        timeout: float = DEFAULT_CONSISTENCY_TIMEOUT,
        max_keys: int = DEFAULT_MAX_KEYS,
        log: logging.Logger | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"consistency timeout must be > 0 seconds, got {timeout!r}")
        if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
            raise ValueError(f"max_keys must be an int >= 1, got {max_keys!r}")
        self.clock: Clock = REAL_CLOCK if clock is None else clock
        self.timeout = float(timeout)
        self.max_keys = max_keys
        self.log = log or logging.getLogger("pyinformers.controller")
        self._lock = threading.Lock()
        # (group, plural) -> informer caching it. Written by watch() before start, read after.
        self._caches: dict[tuple[str, str], Any] = {}
        # invariant: every entry has at least one write; insertion order is the order of last record
        self._pending: OrderedDict[Any, _Pending] = OrderedDict()
        self._stats = ConsistencyStats()
        for informer in informers:
            self.add_informer(informer)

    def add_informer(self, informer: Any) -> None:
        """Check writes to the resource ``informer`` caches against its cache."""
        resource = getattr(getattr(informer, "lister", None), "resource", None) or getattr(
            informer, "resource", None
        )
        if resource is None or getattr(informer, "indexer", None) is None:
            return  # a bare test double: nothing to compare with
        with self._lock:
            self._caches.setdefault((resource.group, resource.plural), informer)

    # -- recording ----------------------------------------------------------------------
    def record(self, key: Any, resource: Any, verb: str, answer: Any) -> None:
        """The reconcile of ``key`` wrote ``resource``; the server answered ``answer``."""
        group: str = getattr(resource, "group", "")
        plural: str = getattr(resource, "plural", "")
        if (group, plural) not in self._caches or not isinstance(answer, dict):
            return
        md = answer.get("metadata")
        if not isinstance(md, dict):
            return  # a Status (a delete answered without the object): nothing to wait for
        rv = _rv(md.get("resourceVersion"))
        if rv is None:
            return
        try:
            obj_key = object_key(answer)
        except ValueError:
            return
        deleted = verb == "delete"
        now = self.clock.now()
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = _Pending(now)
            else:
                self._pending.move_to_end(key)
            ident = (group, plural, obj_key)
            old = pending.writes.get(ident)
            if old is None or old[0] < rv:
                pending.writes[ident] = (rv, deleted)
            self._stats.recorded += 1
            self._trim_locked(now)

    def _trim_locked(self, now: float) -> None:
        pending = self._pending
        while len(pending) > self.max_keys:
            pending.popitem(last=False)
            self._stats.evicted += 1
        # The front is the least recently recorded: drop what can no longer defer anything.
        while pending:
            first = next(iter(pending.values()))
            if now - first.since < self.timeout:
                break
            pending.popitem(last=False)

    def forget(self, key: Any) -> None:
        """Drop the records of ``key`` (it is no longer this replica's to reconcile)."""
        with self._lock:
            self._pending.pop(key, None)

    def clear(self) -> None:
        """Drop every record (leadership ended, the controller stops)."""
        with self._lock:
            self._pending.clear()

    # -- checking -----------------------------------------------------------------------
    def check(self, key: Any) -> float | None:
        """None when ``key`` may be reconciled now; else the seconds to defer it by.

        Drops the records of ``key`` when they are all caught up, or when the
        oldest is ``timeout`` old (logged at WARNING, counted).
        """
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                return None
            writes = list(pending.writes.items())
        behind = [
            (ident, rv)
            for ident, (rv, deleted) in writes
            if not self._caught_up(ident, rv, deleted)
        ]
        now = self.clock.now()
        with self._lock:
            current = self._pending.get(key)
            if (
                current is not pending
            ):  # recorded anew or forgotten meanwhile: decide on what is there now
                return None if current is None else 0.0
            if not behind:
                del self._pending[key]
                return None
            waited = now - pending.since
            if waited >= self.timeout:
                del self._pending[key]
                self._stats.timeouts += 1
                timed_out = True
            else:
                pending.writes = {ident: pending.writes[ident] for ident, _ in behind}
                delay = min(
                    _FIRST_DELAY * (2**pending.deferrals), _MAX_DELAY, self.timeout - waited
                )
                pending.deferrals += 1
                self._stats.deferred += 1
                timed_out = False
        if timed_out:
            (group, plural, obj_key), rv = behind[0]
            self.log.warning(
                "reconciling %r although the cache has not caught up with its own write after %g s "
                "(%s %s at resourceVersion %d, and %d more): the watch is behind",
                key,
                waited,
                plural + ("." + group if group else ""),
                obj_key,
                rv,
                len(behind) - 1,
            )
            return None
        return max(delay, 0.0)

    def _caught_up(self, ident: tuple[str, str, str], rv: int, deleted: bool) -> bool:
        informer = self._caches.get(ident[:2])
        if informer is None:
            return True
        try:
            cached = informer.indexer.get_by_key(ident[2])
        except Exception:  # a cache that cannot answer cannot be waited for
            return True
        if cached is not None:
            seen = _rv((cached.get("metadata") or {}).get("resourceVersion"))
            return seen is None or seen >= rv
        if deleted:
            return True
        last = getattr(informer, "last_sync_resource_version", None)
        seen = _rv(last()) if callable(last) else None
        return (
            seen is not None and seen >= rv
        )  # an informer that says nothing of its progress: wait

    # -- looking at it ------------------------------------------------------------------
    def stats(self) -> ConsistencyStats:
        """A snapshot of the counts."""
        with self._lock:
            s = self._stats
            return ConsistencyStats(
                s.recorded, s.deferred, s.timeouts, s.evicted, len(self._pending)
            )

    def __repr__(self) -> str:
        s = self.stats()
        return f"<ConsistencyGuard tracked={s.tracked} deferred={s.deferred} timeouts={s.timeouts}>"
