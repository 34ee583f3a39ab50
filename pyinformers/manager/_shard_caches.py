"""Shard-aware caches for a sharded Manager: each replica caches only the objects of the shards it holds.

``ShardingConfig(name, shard_caches=True)`` turns it on (docs/ha.rst has the
safety argument and the costs). The pieces:

* **Which caches follow the shards.** The Manager's factory hands out
  :class:`~pyinformers.cache._sharded.ShardedInformer`\\ s; at start,
  :meth:`ShardCaches.plan` looks at the controllers' watches. An informer
  watched only with :class:`~pyinformers.controller.EnqueueForObject` holds
  *primaries* (an object's shard is its own key's, ``shard_of(key)``, the
  very function that admits its reconciles); one watched only with
  :class:`~pyinformers.controller.EnqueueForOwner` of one owner kind (the
  controller reference) holds *children* (an object's shard is its
  controller owner's key's). Every other informer caches every object
  (``cache_whole``): a kind watched both ways, mapped, or only read.
* **The label.** Every cached primary and child carries
  :data:`~pyinformers.api.meta.SHARD_LABEL` = its shard. Children get it at
  creation (:func:`~pyinformers.api.meta.set_controller_reference` copies the
  owner's). Objects without it are seen by a small metadata-only informer
  per sharded kind on every replica (selector ``!SHARD_LABEL``, normally
  near empty); the replica holding the object's shard labels it, one merge
  patch per object, once. An object in shard *t*'s cache whose shard is
  really *s* (a label edited by someone) is relabelled by *t*'s holder,
  the only replica that sees it.
* **Readiness per shard.** A gained shard's keys are admitted only once
  that shard's caches (every sharded kind) synced: until then their
  reconciles are deferred, not dropped, and released when it synced.
* **A label edited away is not a deletion.** An object whose label stops
  matching leaves its shard's informer as a delete. The guard hears of
  every delete before any handler does and marks the key *suspect*; a
  suspect key is not reconciled (deferred) until a read of the server
  settles it: gone (or another uid): the deletion was real, release the
  key; still there: restore the label (when we hold its shard) and release
  the key once the object is back in the cache. The same holds when the
  label is put right: the object leaves the wrong shard's cache and enters
  its own through another watch, the delete possibly first, so a replica
  holding its own shard treats that delete as suspect too.

Threads: the guard runs on the informers' delivery threads and does no I/O;
labelling and confirming run on two daemon threads
``pyinformers-shard-labels-<n>``; :meth:`ShardCaches.follow` is called from
the coordinator's thread and by its settle timer (on the clock's timer
thread), one call at a time, and only starts or stops informers there: the
wait for a gained shard's sync runs on a thread of its own;
:meth:`ShardCaches.admit` from workers. One lock
guards the ready set, the suspects and the deferred keys; it is never held
across a call out.
"""

from __future__ import annotations

import logging
import queue as _queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from pyinformers._allocator import trim_free_memory
from pyinformers.api import Conflict, NotFound
from pyinformers.api.meta import SHARD_LABEL, object_key
from pyinformers.cache._sharded import ShardedInformer, unlabelled_selector
from pyinformers.cache._tombstone import DeletedFinalStateUnknown
from pyinformers.clock import REAL_CLOCK, Clock, TimerHandle
from pyinformers.controller._controller import Controller
from pyinformers.controller._handlers import EnqueueForObject, EnqueueForOwner
from pyinformers.leaderelection._rendezvous import shard_of

__all__ = ["Followed", "ShardCacheAdmission", "ShardCaches", "following"]

log = logging.getLogger("pyinformers.manager._shard_caches")

_WORKERS = 2  # label writes and confirming reads in flight at once
_RETRY = 2.0  # seconds before a failed write, or an unsettled suspect, is looked at again
_POLL = 0.05  # how often a gained shard's sync is looked at (real seconds)


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


def _own_key(obj: Any) -> str | None:
    try:
        return object_key(obj)
    except ValueError:
        return None


class _Kind:
    """One sharded cache: its informer, how an object's shard key is found, its clients and guard."""

    def __init__(self, caches: ShardCaches, informer: ShardedInformer, key_of: Callable) -> None:
        self.caches = caches
        self.informer = informer
        self.key_of: Callable[[Any], str | None] = key_of
        self.client: Any = None
        self.unlabelled: Any = None

    # -- the guard: the shard informers' changes, first and inline (no I/O here) --------------
    def on_add(self, shard: int, obj: Any) -> None:
        self._arrived(shard, obj)

    def on_update(self, shard: int, old: Any, new: Any) -> None:
        self._arrived(shard, new)

    def _arrived(self, shard: int, obj: Any) -> None:
        key = self.key_of(obj)
        if key is None:
            return
        right = self.caches.shard_of(key)
        if (
            right != shard
        ):  # labelled into the wrong shard (edited): only this shard's holder sees it
            self.caches.label(self, obj, right, restore=True)
        elif key in self.caches.suspects:
            self.caches.settle(key)

    def on_delete(self, shard: int, obj: Any) -> None:
        obj = _unwrap(obj)
        key = self.key_of(obj) if obj is not None else None
        if key is None:
            return
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return  # the end of a graceful deletion: it is gone
        if self.caches.shard_of(key) != shard and not self.caches.owns(key):
            return  # a foreign object leaving the wrong shard's cache, for a shard not ours
        # Its own shard's object left (a label edited away), or a foreign one left the wrong
        # shard's cache (its label put right) on its way into its own shard's, which is ours:
        # the two caches are two watches, so the delete can come before the add. Either way
        # its reconciles wait until it is back in its cache, or a read says it is gone.
        self.caches.suspect(self, key, obj)

    # -- the unlabelled informer (inline too: it only hands work over) ------------------------
    def on_unlabelled(self, obj: Any) -> None:
        key = self.key_of(obj)
        if key is not None and self.caches.owns(key):
            self.caches.label(self, obj, self.caches.shard_of(key), restore=False)


class _UnlabelledHandler:
    __slots__ = ("kind",)

    runs_inline = True

    def __init__(self, kind: _Kind) -> None:
        self.kind = kind

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self.kind.on_unlabelled(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.kind.on_unlabelled(new)

    def on_delete(self, obj: Any) -> None:
        pass


class Followed(NamedTuple):
    """A shardable informer that follows the shards, and how an object's shard is found."""

    resource: Any
    selection: Any
    informer: ShardedInformer
    #: ``("object",)``: primaries, an object's own key; ``("owner", kind, group, namespaced)``:
    #: children, their controller owner's key.
    role: tuple


def following(factory: Any, controllers: Iterable[Controller]) -> list[Followed]:
    """The factory's shardable informers that follow the shards (module docstring); builds nothing.

    The others cache every object: a kind watched both as primaries and as
    children, through a mapping, with every owner, or only read.
    """
    roles: dict[int, Any] = {}
    for controller in controllers:
        for watch in controller.watches:
            informer = watch.informer
            if not isinstance(informer, ShardedInformer):
                continue
            handler = watch.handler
            role: Any
            if type(handler) is EnqueueForObject:
                role = ("object",)
            elif isinstance(handler, EnqueueForOwner) and handler.controller_only:
                role = ("owner", handler.owner_kind, handler.owner_group, handler.owner_namespaced)
            else:
                role = None  # mapped keys, or every owner: no one shard per object
            if id(informer) in roles and roles[id(informer)] != role:
                role = None  # primaries of one controller, children of another: cached whole
            roles[id(informer)] = role
    return [
        Followed(resource, selection, informer, roles[id(informer)])
        for (resource, selection), informer in factory.informers().items()
        if isinstance(informer, ShardedInformer) and roles.get(id(informer)) is not None
    ]


class ShardCaches:
    """The shard-aware caches of one sharded Manager (see the module docstring).

    :param factory: the Manager's factory (made shardable before the controllers asked it for informers).
    :param shards: the shard count (the coordinator's).
    :param settle: seconds a shard must stay held before its caches are listed
        (the Manager passes two coordinator steps). Replicas that start
        together hand shards around for a few steps before the assignment
        settles; a shard that is held only in passing is never listed, so
        no replica's memory climbs to the whole cache on a cold start (and
        Python keeps much of what it once allocated).
    :param clock: measures the settle time and runs the timers (settling, retries); tests pass a
        :class:`~pyinformers.clock.FakeClock`.
    """

    def __init__(
        self, factory: Any, shards: int, settle: float = 0.0, *, clock: Clock | None = None
    ) -> None:
        if not settle >= 0:
            raise ValueError(f"settle must be >= 0 seconds, got {settle!r}")
        self.factory = factory
        self.shards = int(shards)
        self.settle_delay = float(settle)
        self.clock: Clock = clock or REAL_CLOCK
        self.kinds: list[_Kind] = []
        self._owns: Callable[[str], bool] = lambda key: False
        self._lock = threading.Lock()
        # Under _lock: shards whose caches synced; suspect keys; deferred keys and the queues they wait for.
        self.ready: set[int] = set()
        self.suspects: dict[str, _Kind] = {}
        self._waiting: dict[str, set[Any]] = {}
        self._following: set[int] = set()  # shards whose caches run (held and settled)
        self._held: set[int] = set()  # the coordinator's latest word
        self._held_since: dict[int, float] = {}  # monotonic time each held shard was gained
        self._follow_lock = threading.Lock()  # follow() calls one at a time
        # Under _follow_lock: the one pending settle look-again (a clock timer).
        self._settle_timer: TimerHandle | None = None
        self._labelling: set[tuple[int, str]] = set()
        # The version each object had when we labelled it (its stale copies are not labelled again);
        # forgotten once the object is back in its shard's cache.
        self._written: dict[tuple[int, str], str] = {}
        self._tasks: _queue.SimpleQueue[Callable[[], None] | None] = _queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()
        #: Counters (tests, logs): label writes, of which restores, confirmed deletions, drifts seen.
        self.labelled = 0
        self.restored = 0
        self.deletions = 0
        self.drifts = 0

    def shard_of(self, key: str) -> int:
        return shard_of(key, self.shards)

    def owns(self, key: str) -> bool:
        return self._owns(key)

    # -- planning, before the factory starts ---------------------------------------------------
    def plan(self, controllers: Iterable[Controller]) -> list[str]:
        """Decide which informers follow the shards; returns their names. Call before the factory starts."""
        followed = {id(f.informer): f for f in following(self.factory, controllers)}
        for informer in self.factory.informers().values():
            if isinstance(informer, ShardedInformer) and id(informer) not in followed:
                informer.cache_whole()
        for resource, selection, informer, role in followed.values():
            if role[0] == "object":
                kind = _Kind(self, informer, _own_key)
            else:
                owners = EnqueueForOwner(role[1], owner_group=role[2], owner_namespaced=role[3])
                kind = _Kind(
                    self, informer, lambda obj, o=owners: next(iter(o.owner_keys(obj)), None)
                )
            informer.set_guard(kind)
            kind.client = self.factory.client(resource, verbs=("get", "patch"))
            labels = ",".join(filter(None, (selection.label_selector, unlabelled_selector())))
            kind.unlabelled = self.factory.informer(
                resource,
                namespace=selection.namespace,
                label_selector=labels,
                metadata_only=True,
            )
            kind.unlabelled.add_event_handler(_UnlabelledHandler(kind))
            informer.set_shards(())  # known: none held yet (synced, empty)
            self.kinds.append(kind)
        for n in range(_WORKERS if self.kinds else 0):
            thread = threading.Thread(
                target=self._work, name=f"pyinformers-shard-labels-{n}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return [k.informer.name for k in self.kinds]

    def attach(self, owns: Callable[[str], bool]) -> None:
        """Label only keys ``owns(key)`` accepts (the coordinator's: held and not being given up)."""
        self._owns = owns

    # -- following the held shards (coordinator thread, settle timer) ---------------------------
    def follow(self, held: Iterable[int] | None = None) -> None:
        """Cache exactly the shards ``held`` once settled: start the gained ones' caches, drop the lost ones'.

        ``held`` None: the last set given (a settle timer's call). A shard
        lost is dropped at once; a shard gained is listed once it has been
        held for ``settle_delay`` seconds (a timer looks again), its keys waiting
        until then as they wait for any cache to sync.
        """
        with self._follow_lock:
            now = self.clock.now()
            if held is not None:
                self._held = set(held)
            held = self._held
            self._held_since = {s: self._held_since.get(s, now) for s in held}
            settled = {  # (1e-9: the settle timer fires at the settle time, give or take a rounding)
                s
                for s in held
                if s in self._following or now - self._held_since[s] >= self.settle_delay - 1e-9
            }
            for kind in self.kinds:
                kind.informer.set_shards(settled)
            with self._lock:
                gained = settled - self._following
                self._following = settled
                self.ready &= settled
                for key in [k for k in self.suspects if self.shard_of(k) not in held]:
                    del self.suspects[key]
                for key in [k for k in self._waiting if self.shard_of(k) not in held]:
                    del self._waiting[key]  # not ours any more: the new holder reconciles it
            if self._settle_timer is not None:
                self._settle_timer.cancel()
                self._settle_timer = None
            unsettled = held - settled
            if unsettled and not self._stopped.is_set():
                wait = min(self.settle_delay - (now - self._held_since[s]) for s in unsettled)
                self._settle_timer = self.clock.call_later(max(wait, 0.0), self.follow)
        if gained:  # waited for, trimmed and released off the caller's thread (the coordinator's,
            # or the clock's timer thread, which every timer of the process shares)
            threading.Thread(
                target=self._await_sync,
                args=(gained,),
                name="pyinformers-shard-sync",
                daemon=True,
            ).start()

    def _await_sync(self, gained: set[int]) -> None:
        pending = set(gained)
        while pending and not self._stopped.is_set():
            with self._lock:
                pending &= self._following
            done = {s for s in pending if all(k.informer.shard_synced(s) for k in self.kinds)}
            if done:
                self._mark_ready(done)
                pending -= done
            if pending:
                self._stopped.wait(_POLL)

    def _mark_ready(self, shards: set[int]) -> None:
        with self._lock:
            shards = shards & self._following
            self.ready |= shards
        log.info("shard caches synced: shards %s", sorted(shards))
        trim_free_memory()  # the lists' response buffers, freed but kept by the C allocator
        self._release(lambda key: self.shard_of(key) in shards)
        for kind in self.kinds:  # objects of these shards that still lack the label: ours to label
            for obj in kind.unlabelled.indexer.list():
                key = kind.key_of(obj)
                if key is not None and self.shard_of(key) in shards:
                    self.label(kind, obj, self.shard_of(key), restore=False)

    # -- admission (worker threads) -------------------------------------------------------------
    def admit(self, key: str, queue: Any) -> bool:
        """Whether ``key``'s reconcile may run now; if not, it is deferred and re-added to ``queue`` later."""
        shard = self.shard_of(key)
        with self._lock:
            if shard in self.ready and key not in self.suspects:
                return True
            self._waiting.setdefault(key, set()).add(queue)
            return False

    def pending_shards(self) -> list[int]:
        """Held shards whose caches have not synced yet (or are not listed yet: not settled)."""
        with self._lock:  # _held is replaced whole, never changed in place
            return sorted(self._held - self.ready)

    def _release(self, releasable: Callable[[str], bool]) -> None:
        with self._lock:
            keys = [k for k in self._waiting if releasable(k) and k not in self.suspects]
            woken = [(k, self._waiting.pop(k)) for k in keys]
        for key, queues in woken:
            for queue in queues:
                queue.add(key)

    # -- suspects: a delete that may be a label edited away -------------------------------------
    def suspect(self, kind: _Kind, key: str, obj: Any) -> None:
        with self._lock:
            self.suspects[key] = kind
        self._tasks.put(lambda: self._confirm(kind, key, obj))

    def settle(self, key: str) -> None:
        with self._lock:
            if self.suspects.pop(key, None) is None:
                return
        self._release(lambda k: k == key)

    def _confirm(self, kind: _Kind, key: str, obj: Any) -> None:
        """Read the object: gone (or replaced) settles the key; still there is a label to restore."""
        with self._lock:
            if self.suspects.get(key) is not kind:
                return  # settled meanwhile (back in the cache), or not ours any more
        md = obj.get("metadata") or {}
        name, namespace = md.get("name"), md.get("namespace")
        try:
            now = kind.client.get(name, namespace) if namespace else kind.client.get(name)
        except NotFound:
            now = None
        except Exception as err:
            log.info("shard caches: reading %s/%s failed (%s); trying again", namespace, name, err)
            self._later(lambda: self._confirm(kind, key, obj))
            return
        now_md = (now or {}).get("metadata") or {}
        if now is None or now_md.get("uid") != md.get("uid") or now_md.get("deletionTimestamp"):
            self.deletions += 1
            self.settle(key)  # the deletion was real: the reconcile may see it gone
            return
        self.drifts += 1
        right = self.shard_of(key)
        if (now_md.get("labels") or {}).get(SHARD_LABEL) != str(right) and self.owns(key):
            self.label(kind, now, right, restore=True)
        if kind.informer.indexer.get_by_key(object_key(now)) is not None:
            self.settle(key)
        else:  # it comes back into the cache once labelled; look again in a while in case it does not
            self._later(lambda: self._confirm(kind, key, obj))

    # -- label writes ---------------------------------------------------------------------------
    def label(self, kind: _Kind, obj: Any, shard: int, *, restore: bool) -> None:
        """Write ``SHARD_LABEL: shard`` on ``obj`` (merge patch), once per version of it seen."""
        md = obj.get("metadata") or {}
        if (md.get("labels") or {}).get(SHARD_LABEL) == str(shard):
            return
        name, namespace = md.get("name"), md.get("namespace")
        ident = (id(kind), f"{namespace}/{name}")
        version = md.get("resourceVersion")
        with self._lock:
            if ident in self._labelling or (version and self._written.get(ident) == version):
                return  # being written, or a stale copy (another cache's) of a version already fixed
            self._labelling.add(ident)
            self._written.pop(ident, None)
        self._tasks.put(lambda: self._write(kind, ident, name, namespace, shard, restore, version))

    def _write(
        self,
        kind: _Kind,
        ident: tuple,
        name: Any,
        namespace: str | None,
        shard: int,
        restore: bool,
        version: str | None = None,
    ) -> None:
        md: dict[str, Any] = {"labels": {SHARD_LABEL: str(shard)}}
        if (
            version
        ):  # a precondition: a stale copy (the previous holder may have labelled it) is not written
            md["resourceVersion"] = version
        try:
            kind.client.patch(name, {"metadata": md}, namespace)
        except NotFound:
            pass
        except Conflict:  # changed since the copy we saw: read it and decide again
            with self._lock:
                self._labelling.discard(ident)
            self._tasks.put(lambda: self._recheck(kind, name, namespace, shard, restore))
            return
        except Exception as err:
            log.info(
                "shard caches: labelling %s/%s failed (%s); trying again", namespace, name, err
            )
            with self._lock:
                self._labelling.discard(ident)
            self._later(
                lambda: self.label(
                    kind,
                    {"metadata": {"name": name, "namespace": namespace}},
                    shard,
                    restore=restore,
                )
            )
            return
        else:
            self.labelled += 1
            if version:
                with self._lock:
                    self._written[ident] = version
            if restore:
                self.restored += 1
                log.info(
                    "shard caches: restored the shard label of %s/%s (%d)", namespace, name, shard
                )
        with self._lock:
            self._labelling.discard(ident)

    def _recheck(
        self, kind: _Kind, name: Any, namespace: str | None, shard: int, restore: bool
    ) -> None:
        """A label write met a newer version: label that version if it still needs it."""
        try:
            now = kind.client.get(name, namespace) if namespace else kind.client.get(name)
        except NotFound:
            return
        except Exception as err:
            log.info("shard caches: reading %s/%s failed (%s); trying again", namespace, name, err)
            self._later(lambda: self._recheck(kind, name, namespace, shard, restore))
            return
        self.label(kind, now, shard, restore=restore)  # no write when it carries the label now

    # -- threads --------------------------------------------------------------------------------
    def _later(self, task: Callable[[], None]) -> None:
        if self._stopped.is_set():
            return
        self.clock.call_later(_RETRY, lambda: self._tasks.put(task))

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None or self._stopped.is_set():
                return
            try:
                task()
            except Exception:
                log.exception("shard caches: a label write or check failed")

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped.set()
        with self._follow_lock:
            if self._settle_timer is not None:
                self._settle_timer.cancel()
        for _ in self._threads:
            self._tasks.put(None)
        for thread in self._threads:
            thread.join(timeout)


class ShardCacheAdmission:
    """One controller's admission: the replica holds the key's shard, its caches synced, the key is not suspect.

    A key refused only for the caches is deferred (re-added to the
    controller's queue once they are ready), not dropped.
    """

    __slots__ = ("coordinator", "caches", "queue")

    def __init__(self, coordinator: Any, caches: ShardCaches, queue: Any) -> None:
        self.coordinator = coordinator
        self.caches = caches
        self.queue = queue

    def enter(self, key: Any) -> bool:
        key = str(key)
        if not self.coordinator.enter(key):
            return False
        if self.caches.admit(key, self.queue):
            return True
        self.coordinator.exit(key)
        return False

    def exit(self, key: Any) -> None:
        self.coordinator.exit(str(key))
