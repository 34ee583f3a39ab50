"""A cache of only the shards this replica holds: one informer per held shard, shown as one.

With sharding on, a replica reconciles only the keys of the shards it holds;
:class:`ShardedInformer` lets it *cache* only their objects too. Every object
carries a shard label (:data:`SHARD_LABEL`, its value the shard's number) and
each held shard ``i`` is cached by an informer of its own, built by the
caller's ``make(i)`` with the label selector ``SHARD_LABEL=i``
(:func:`shard_selector`). :meth:`ShardedInformer.set_shards` follows the
shards the replica holds: a shard gained gets its informer (listing only that
shard's objects: a hand-over re-lists the moved shards and nothing else), a
shard lost has its informer stopped and its cache dropped.

Handlers added to it are added to every shard's informer, present and
future: a shard's informer delivers its initial list as adds, so the keys of
a shard just taken reach the work queue without waiting for an event. The
lister reads every held shard's cache (an owner and the children it created
share a shard label, so a reconcile finds its children in the cache of its
own key's shard).

Objects of shards not held are not cached at all: memory per replica falls
with the number of replicas.

:meth:`~ShardedInformer.cache_whole` turns it into a plain cache of every
object instead (one informer, built by ``make(None)``, shard :data:`WHOLE`):
the Manager's factory hands out shardable informers when shard caches are on
and decides at start, once it knows which kinds are primaries and children,
which ones follow the shards and which cache everything.

A *guard* (optional) is told, on the thread that applies each change and
before any handler hears of it, of every add, update and delete in each
shard's informer (``guard.on_add(shard, obj)``, ``on_update(shard, old, new)``,
``on_delete(shard, obj)``): the Manager's shard caches use it to notice an
object whose shard label was removed or edited (it leaves its shard's
informer as a delete) before a reconcile could take that for a deletion. That assumes the shard label is right; who
keeps it right (labelling new objects, restoring an edited label) is the
manager's part (docs/ha.rst).

Thread-safety: :meth:`~ShardedInformer.set_shards` is called from one thread
(the shard coordinator's) and never blocks it: a dropped shard's informer is
stopped on a thread of its own (:meth:`~ShardedInformer.stop` waits for
those too); reads from any. The set of informers is replaced
whole under a lock, never changed in place.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyinformers._allocator import trim_free_memory
from pyinformers.api.meta import SHARD_LABEL
from pyinformers.cache import Lister
from pyinformers.cache._memory import ESTIMATE_MAX_AGE, CacheMemory, summed
from pyinformers.cache._multi import MergedIndexer

log = logging.getLogger("pyinformers.cache._sharded")

_RETIRE_TIMEOUT = 5.0  # how long a dropped shard's informer gets to stop (on a thread of its own)

__all__ = [
    "SHARD_LABEL",
    "WHOLE",
    "ShardedInformer",
    "ShardedRegistration",
    "shard_selector",
    "unlabelled_selector",
]

#: The shard number under which :meth:`ShardedInformer.cache_whole` keeps its one informer.
WHOLE = -1


def shard_selector(shard: int) -> str:
    """The label selector of one shard's objects."""
    return f"{SHARD_LABEL}={int(shard)}"


def unlabelled_selector() -> str:
    """The label selector of the objects that carry no shard label."""
    return f"!{SHARD_LABEL}"


class _GuardHandler:
    """Tells a guard of one shard informer's changes, inline (before the handlers added after it)."""

    __slots__ = ("guard", "shard")

    runs_inline = True

    def __init__(self, guard: Any, shard: int) -> None:
        self.guard = guard
        self.shard = shard

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self.guard.on_add(self.shard, obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.guard.on_update(self.shard, old, new)

    def on_delete(self, obj: Any) -> None:
        self.guard.on_delete(self.shard, obj)


class _ShardIndexer(MergedIndexer):
    """The held shards' indexers as one, whichever shards are held at the moment of each read.

    Lookups by key try each shard (an owner's children share its shard, not its key's hash).
    """

    __slots__ = ("_snapshot",)

    def __init__(self) -> None:
        super().__init__({})
        self._snapshot: dict[str, Any] = {}

    def _indexers(self) -> dict[str, Any]:
        return self._snapshot  # replaced whole by the owner, never changed in place

    def follow(self, informers: dict[int, Any]) -> None:
        self._snapshot = {str(s): i.indexer for s, i in sorted(informers.items())}

    def get_by_key(self, key: str) -> Any | None:
        for indexer in self._indexers().values():
            obj = indexer.get_by_key(key)
            if obj is not None:
                return obj
        return None

    def by_index(self, name: str, value: str) -> builtins.list[Any]:
        out: builtins.list[Any] = []
        for indexer in self._indexers().values():
            out.extend(indexer.by_index(name, value))
        return out


class ShardedRegistration:
    """One handler's registrations on the shard informers, present and future."""

    def __init__(self, owner: ShardedInformer, handler: Any, kwargs: dict) -> None:
        self._owner = owner
        self.handler = handler
        self.kwargs = kwargs
        self._by_shard: dict[int, Any] = {}
        self._removed = False

    def _add(self, shard: int, informer: Any) -> None:
        if not self._removed:
            self._by_shard[shard] = informer.add_event_handler(self.handler, **self.kwargs)

    def _drop(self, shard: int) -> None:
        self._by_shard.pop(shard, None)

    def has_synced(self) -> bool:
        return all(r.has_synced() for r in list(self._by_shard.values()))

    def backlog(self) -> int:
        return sum(r.backlog() for r in list(self._by_shard.values()))

    def is_removed(self) -> bool:
        return self._removed

    def remove(self, timeout: float = 5.0) -> bool:
        self._removed = True
        self._owner._forget(self)
        deadline = time.monotonic() + timeout
        ok = True
        for registration in list(self._by_shard.values()):
            ok = registration.remove(max(0.0, deadline - time.monotonic())) and ok
        self._by_shard.clear()
        return ok


class ShardedInformer:
    """The cache of the shards held (module docstring).

    :param make: ``shard -> informer`` (not started), restricted to that shard's objects;
        ``make(None)`` (only with :meth:`cache_whole`) an informer of every object.
    :param name: the name reports use.
    :param resource: the resource cached.
    :param guard: told of each shard informer's changes first (module docstring), or None.
    """

    def __init__(
        self,
        make: Callable[[int | None], Any],
        *,
        name: str,
        resource: Any = None,
        guard: Any = None,
    ) -> None:
        self._make = make
        self._name = name
        self._resource = resource
        self._guard = guard
        self._lock = threading.Lock()
        self._informers: dict[int, Any] = {}
        self._registrations: list[ShardedRegistration] = []
        self._indexers: dict[str, Callable[[Any], list]] = {}
        self._started = False
        self._stopped = False
        self._shards_known = False
        self._whole = False
        self._moves = 0
        self._retiring: builtins.list[threading.Thread] = []  # threads stopping dropped informers
        self._indexer = _ShardIndexer()
        self._lister = Lister(self._indexer, resource=resource)

    @property
    def name(self) -> str:
        return self._name

    @property
    def resource(self) -> Any:
        return self._resource

    @property
    def whole(self) -> bool:
        """True once :meth:`cache_whole` made this a cache of every object."""
        return self._whole

    @property
    def lister(self) -> Any:
        return self._lister

    @property
    def indexer(self) -> MergedIndexer:
        return self._indexer

    def shards(self) -> builtins.set[int]:
        with self._lock:
            return set(self._informers)

    def informers(self) -> dict[int, Any]:
        with self._lock:
            return dict(self._informers)

    @property
    def moves(self) -> int:
        """How many shard informers were started or stopped by :meth:`set_shards`."""
        return self._moves

    def set_guard(self, guard: Any) -> None:
        """Tell ``guard`` of the changes of shard informers built from now on (module docstring)."""
        with self._lock:
            self._guard = guard

    def shard_synced(self, shard: int) -> bool:
        """Whether ``shard`` is held and its informer's cache synced."""
        informer = self.informers().get(shard)
        return informer is not None and bool(informer.has_synced())

    # -- following the held shards ----------------------------------------------------------
    def cache_whole(self) -> None:
        """Cache every object, with one informer (``make(None)``), for good; before :meth:`set_shards`."""
        with self._lock:
            if self._shards_known and not self._whole:
                raise RuntimeError(f"{self._name}: already following shards")
            if self._whole or self._stopped:
                return
            self._whole = True
        self._change({WHOLE}, whole=True)

    def set_shards(self, shards: Iterable[int]) -> tuple[builtins.set[int], builtins.set[int]]:
        """Cache exactly ``shards`` from now on; returns ``(gained, lost)``."""
        if self._whole:
            raise RuntimeError(f"{self._name} caches every object (cache_whole): it has no shards")
        return self._change({int(s) for s in shards}, whole=False)

    def _new(self, shard: int, whole: bool) -> Any:
        informer = self._make(None if whole else shard)
        if self._indexers:
            informer.add_indexers(self._indexers)
        if self._guard is not None and not whole:
            informer.add_event_handler(_GuardHandler(self._guard, shard))
        return informer

    def _change(
        self, wanted: builtins.set[int], whole: bool
    ) -> tuple[builtins.set[int], builtins.set[int]]:
        with self._lock:
            if self._stopped:
                return set(), set()
            current = dict(self._informers)
            gained, lost = wanted - set(current), set(current) - wanted
            started = self._started
            for shard in gained:
                current[shard] = self._new(shard, whole)
                for registration in self._registrations:
                    registration._add(shard, current[shard])
            dropped = {shard: current.pop(shard) for shard in lost}
            self._informers = current
            self._indexer.follow(current)
            self._shards_known = True
            if not whole:
                self._moves += len(gained) + len(lost)
        for registration in list(self._registrations):
            for shard in lost:
                registration._drop(shard)
        for informer in dropped.values():
            informer.stop(timeout=0)
        if started:
            for shard in gained:
                current[shard].start()
        if dropped:
            # The caller is the shard coordinator's thread, which must go on renewing its
            # membership: a dropped informer's threads are waited for elsewhere (and by stop()).
            retiring = threading.Thread(
                target=self._retire,
                args=(list(dropped.values()),),
                name=f"pyinformers-shard-retire-{self._name}",
                daemon=True,
            )
            with self._lock:
                self._retiring = [t for t in self._retiring if t.is_alive()] + [retiring]
            retiring.start()
        return gained, lost

    def _retire(self, informers: builtins.list[Any]) -> None:
        for informer in informers:
            if not informer.stop(timeout=_RETIRE_TIMEOUT):
                log.warning("%s: a dropped shard's informer did not stop in time", self._name)
        informers.clear()  # the last references to their caches: freed here
        trim_free_memory()  # and handed back to the OS, or the replica keeps their RSS

    # -- handlers ------------------------------------------------------------------------------
    def add_event_handler(
        self, handler: Any, *, resync_period: float | None = None
    ) -> ShardedRegistration:
        kwargs = {} if resync_period is None else {"resync_period": resync_period}
        registration = ShardedRegistration(self, handler, kwargs)
        with self._lock:
            self._registrations.append(registration)
            for shard, informer in self._informers.items():
                registration._add(shard, informer)
        return registration

    def _forget(self, registration: ShardedRegistration) -> None:
        with self._lock:
            if registration in self._registrations:
                self._registrations.remove(registration)

    def remove_event_handler(self, registration: ShardedRegistration, timeout: float = 5.0) -> bool:
        return registration.remove(timeout)

    def add_indexers(self, indexers: Mapping[str, Callable[[Any], list]]) -> None:
        """Add indexes to every shard's cache, present and future."""
        with self._lock:
            self._indexers.update(indexers)
            informers = list(self._informers.values())
        for informer in informers:
            informer.add_indexers(indexers)

    def registrations(self) -> builtins.list[Any]:
        out: builtins.list[Any] = []
        for informer in self.informers().values():
            out.extend(informer.registrations())
        return out

    # -- state -----------------------------------------------------------------------------------
    def has_synced(self) -> bool:
        """True once the held shards are known and every one of their caches synced."""
        return self._shards_known and all(i.has_synced() for i in self.informers().values())

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            informers = self.informers()
            for informer in informers.values():
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not informer.wait_for_cache_sync(remaining):
                    return False
            if self.has_synced():
                return True
            if self._stopped or (deadline is not None and time.monotonic() >= deadline):
                return False
            time.sleep(
                0.05
            )  # the held shards are not known yet: set_shards() comes from another thread

    def is_running(self) -> bool:
        return self._started and not self._stopped

    def healthy(self) -> bool:
        return not self.health_problem()

    def health_problem(self) -> str:
        if not self.is_running():
            return "not running"
        for shard, informer in sorted(self.informers().items()):
            problem = informer.health_problem()
            if problem:
                return f"shard {shard}: {problem}"
        return ""

    def sync_problem(self) -> str:
        if not self._shards_known:
            return "cache not synced; the shards this replica holds are not known yet"
        for shard, informer in sorted(self.informers().items()):
            problem = informer.sync_problem()
            if problem:
                return f"shard {shard}: {problem}"
        return ""

    def object_errors(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for informer in self.informers().values():
            for stage, count in informer.object_errors().items():
                total[stage] = total.get(stage, 0) + count
        return total

    def memory_estimate(self, max_age: float = ESTIMATE_MAX_AGE) -> CacheMemory:
        """The sum of the held shards' estimates."""
        return summed(i.memory_estimate(max_age) for i in self.informers().values())

    def last_sync_resource_version(self) -> str:
        """Each shard's list has its own resourceVersion: ``shard=rv`` pairs, for logs only."""
        return ",".join(
            f"{s}={i.last_sync_resource_version()}" for s, i in sorted(self.informers().items())
        )

    # -- running ---------------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"informer {self._name!r} was stopped; informers do not restart")
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def stop(self, timeout: float = 5.0) -> bool:
        with self._lock:
            self._stopped = True
            informers = list(self._informers.values())
            retiring = list(self._retiring)
        deadline = time.monotonic() + timeout
        for informer in informers:
            informer.stop(timeout=0)
        ok = True
        for informer in informers:
            ok = informer.stop(timeout=max(0.0, deadline - time.monotonic())) and ok
        for thread in retiring:  # dropped shards' informers still stopping
            thread.join(max(0.0, deadline - time.monotonic()))
            ok = not thread.is_alive() and ok
        return ok

    def __repr__(self) -> str:
        return f"<ShardedInformer {self._name!r} shards={sorted(self.shards())} objects={len(self._indexer)}>"
