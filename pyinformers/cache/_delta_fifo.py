"""client-go's DeltaFIFO: the queue between a Reflector and an informer's cache.

A producer (the Reflector) tells the FIFO what happened to each object:
:meth:`DeltaFIFO.add`, :meth:`~DeltaFIFO.update`, :meth:`~DeltaFIFO.delete`,
:meth:`~DeltaFIFO.replace` after a (re)list, :meth:`~DeltaFIFO.resync`. The FIFO
keeps, per key, the list of :class:`Delta` s that arrived since the key was
last popped, in arrival order, and queues each key once. A consumer (the
informer) calls :meth:`~DeltaFIFO.pop`, which hands *all* of one key's deltas
to its ``process`` callback: a consumer sees every change, in order, and
handles a burst of changes to one object in one go.

Deletions the producer never saw are not lost: when a relist (``replace``)
no longer contains an object that the consumer's store (``known_objects``)
still holds, the FIFO queues a ``Deleted`` delta carrying a
:class:`DeletedFinalStateUnknown` tombstone with the last state it knew.
Handlers receiving a delete must therefore accept either an object or a
tombstone.

Invariants (under the lock):

* a key is in ``_queue`` if and only if it is in ``_items``, and
  ``_items[key]`` is a non-empty list;
* a key being processed (in ``_processing``) is handed to no second
  ``pop`` until its ``process`` returns; new deltas for it wait in
  ``_items`` meanwhile;
* two consecutive ``Deleted`` deltas of one key collapse into one (the one
  that is not a tombstone, when there is a choice).

Delivery without a hand-off: a consumer may register a function with
:meth:`DeltaFIFO.deliver_inline`. A change that arrives while the FIFO has
synced, holds no pending delta and is not processing that key then goes
straight to that function, on the producer's thread and under the FIFO's
lock, instead of being queued for a ``pop`` on another thread: in steady state
a watch event costs no thread wake-up between producer and consumer. No
``pop``, ``resync`` or other producer interleaves with such a delivery, so the
per-key order and the invariants above hold whichever thread delivers. Any
backlog (a relist, a resync, changes arriving while a ``pop`` is slow) is
queued and popped as before, and changes arriving meanwhile queue up behind
it until the FIFO is empty again.

Thread-safety: all methods are safe from any thread. ``process`` runs
without the FIFO's lock held, so producers are never blocked by a slow
consumer; an inline delivery runs with it held and must be quick.
``known_objects`` is read, and the inline consumer called, while the FIFO's
lock is held; neither may ever call back into the FIFO.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pyinformers.api.meta import object_key
from pyinformers.cache._tombstone import DeletedFinalStateUnknown
from pyinformers.clock import REAL_CLOCK, Clock

__all__ = [
    "DeltaType",
    "Delta",
    "DeletedFinalStateUnknown",
    "DeltaFIFO",
    "FIFOClosedError",
    "KnownObjects",
]


class DeltaType(enum.Enum):
    """What happened to an object."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    #: the object was (still) in a relist; the consumer decides add or update
    REPLACED = "Replaced"
    #: a periodic resync replaying the consumer's own cache
    SYNC = "Sync"


@dataclass(frozen=True, slots=True)
class Delta:
    """One change: its type and the object after it (or a tombstone, for deletions)."""

    type: DeltaType
    object: Any


class KnownObjects(Protocol):
    """The part of the consumer's store the FIFO reads (the Indexer satisfies it)."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> Any | None: ...


class FIFOClosedError(Exception):
    """Raised by :meth:`DeltaFIFO.pop` once the FIFO is closed."""


ProcessFunc = Callable[["tuple[Delta, ...]", bool], None]
#: ``deliver(key, delta_type, obj)``: one change handed over on the producer's thread.
InlineFunc = Callable[[str, "DeltaType", Any], None]

_DELETED = DeltaType.DELETED

# What happens to an object whose transform or key failed (said in the log line).
_KEEP_CACHED = "left out of this change: the cache keeps the version it had, if any"
_NO_KEY = "left out: an object without a usable key cannot be cached"


class _NotTransformed:
    """What :meth:`DeltaFIFO.transform_listed` returns for an object its transform failed on.

    It stands in the producer's list for the object until :meth:`DeltaFIFO.replace`:
    ``key`` (None when the object has no key either) tells replace that the
    object is still on the server, so the consumer keeps the version it has.
    """

    __slots__ = ("key",)

    def __init__(self, key: str | None) -> None:
        self.key = key


class HandoffBudget:
    """Pending deltas that several bounded FIFOs -- the informers of one process -- hold in all.

    Each FIFO's ``max_pending`` bounds what one producer keeps alive ahead of
    its consumer; with many informers those add up, and the young generation
    drifts into collections again. A FIFO given a budget takes a slot of it
    for every ``add``/``update`` before queueing (waiting while all ``limit``
    slots are taken, but at most ``max_wait`` seconds: the budget is advisory,
    so one stuck informer can slow the others, never stop them) and gives the
    slots back as :meth:`DeltaFIFO.pop` hands the deltas over, or on close.

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self, limit: int, *, max_wait: float = 0.02) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit!r}")
        self.limit = limit
        self._max_wait = max_wait
        self._cond = threading.Condition(threading.Lock())
        self._held = 0
        self._waiting = 0

    @property
    def held(self) -> int:
        return self._held

    def acquire(self) -> None:
        """Take a slot, waiting (at most ``max_wait`` real seconds) while none is free."""
        with self._cond:
            if self._held >= self.limit:
                self._waiting += 1
                try:
                    self._cond.wait_for(lambda: self._held < self.limit, self._max_wait)
                finally:
                    self._waiting -= 1
            self._held += 1

    def release(self, count: int) -> None:
        """Give ``count`` slots back."""
        if count <= 0:
            return
        with self._cond:
            self._held -= count
            if self._waiting:
                self._cond.notify(count)


class DeltaFIFO:
    """A queue of per-key delta lists with client-go's semantics; see the module docstring.

    ``key_func`` computes keys (tombstones are keyed by their ``key``);
    ``known_objects`` is the consumer's store, used to detect deletions on
    :meth:`replace` and to replay objects on :meth:`resync` (without it the
    FIFO knows only what is queued); ``transform`` is applied to each object
    entering through add/update/delete/replace, exactly once -- not to
    tombstones and not to ``Sync`` replays, whose objects come from the
    consumer's store and were transformed on their way in. A producer that
    transforms listed objects as it decodes them (a reflector reading list
    pages, or a streaming list's events) does so with :meth:`transform_listed`
    and hands them to ``replace(..., transformed=True)``, which then does not
    transform them again. ``clock`` measures :meth:`pop` timeouts.
    With ``requeue_on_error`` a ``process`` that raises gets its deltas put
    back (ahead of any that arrived meanwhile) before the error propagates;
    by default, as in client-go, they are dropped.

    ``on_error(stage, obj, error, consequence)``, when given, makes the FIFO
    tolerate one object whose ``transform`` (stage ``"transform"``) or key
    function (stage ``"key"``) raises: it reports the failure and goes on
    (see :mod:`pyinformers.cache._object_errors` for what happens to that
    object). Without it such an error propagates to the producer.

    ``max_pending`` bounds the hand-off: :meth:`add`, :meth:`update` and
    :meth:`delete` wait while that many deltas are pending, until
    :meth:`pop` has drained half of them (or the FIFO closes). A producer
    that decodes far ahead of the consumer keeps every decoded object alive
    meanwhile, and that is what drifts CPython's young generation into
    collections that promote the cache into the oldest generation (see
    :mod:`pyinformers._gc_policy`). :meth:`replace` and :meth:`resync` never
    wait. Only a thread that does not pop may call the waiting methods of a
    bounded FIFO. None (the default) is unbounded.
    """

    def __init__(
        self,
        *,
        key_func: Callable[[Any], str] = object_key,
        known_objects: KnownObjects | None = None,
        transform: Callable[[Any], Any] | None = None,
        clock: Clock | None = None,
        requeue_on_error: bool = False,
        on_error: Callable[[str, Any, BaseException, str], None] | None = None,
        max_pending: int | None = None,
        budget: HandoffBudget | None = None,
    ) -> None:
        if max_pending is not None and max_pending < 1:
            raise ValueError(f"max_pending must be None or >= 1, got {max_pending!r}")
        self._key_func = key_func
        self._on_error = on_error
        self._known = known_objects
        self._transform = transform
        self._clock = clock or REAL_CLOCK
        self._requeue_on_error = requeue_on_error
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Producers waiting for room (bounded FIFOs only) wait here.
        self._room = threading.Condition(self._lock)
        self._max_pending = max_pending
        # Slots of a shared HandoffBudget taken by add/update and not yet handed back.
        self._budget = budget
        self._budgeted = 0
        self._producers_waiting = 0
        # Deltas in _items (all keys), maintained only for a bounded FIFO's waits.
        self._pending = 0
        # pops blocked in a wait: notifications are skipped when nobody waits (the hot path)
        self._waiters = 0
        # key -> deltas not yet popped (never empty); a key is here iff it is in _queue
        self._items: dict[str, list[Delta]] = {}
        # keys in arrival order of their first pending delta
        self._queue: deque[str] = deque()
        # key -> deltas handed to a process() that has not returned yet
        self._processing: dict[str, tuple[Delta, ...]] = {}
        # see deliver_inline(); None: every change is queued for pop()
        self._deliver: InlineFunc | None = None
        # Objects transform_listed() failed on since the last replace (producer's thread only):
        # while 0, replace(transformed=True) holds no _NotTransformed and takes its fast path.
        self._listed_failures = 0
        # True once anything was added/updated/deleted/replaced
        self._populated = False
        # keys of the first replace (plus what was queued then) not yet fully processed
        self._initial_population = 0
        self._closed = False

    # ------------------------------------------------------------------ keys

    def key_of(self, obj: Any) -> str:
        """The key of an object or tombstone."""
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return self._key_func(obj)

    # ------------------------------------------------------------------ producer side

    def _queue_locked(self, key: str, delta: Delta) -> None:
        deltas = self._items.get(key)
        self._pending += 1  # undone below when a delete collapses
        if deltas is None:
            self._items[key] = [delta]
            self._queue.append(key)
            if self._waiters:
                self._cond.notify()
            return
        if delta.type is _DELETED and deltas[-1].type is _DELETED:
            # Consecutive deletes collapse: keep the newer unless it is only a tombstone.
            if not isinstance(delta.object, DeletedFinalStateUnknown):
                deltas[-1] = delta
            self._pending -= 1
            return
        deltas.append(delta)

    def _wait_for_room_locked(self) -> None:
        """Block (lock held) while a bounded FIFO is full; see ``max_pending``."""
        limit = self._max_pending
        if limit is None or self._pending < limit:
            return
        self._producers_waiting += 1
        try:
            while self._pending >= limit and not self._closed:
                self._room.wait()
        finally:
            self._producers_waiting -= 1

    def _failed(self, stage: str, obj: Any, error: Exception) -> None:
        """Hand a transform or key failure to ``on_error`` (re-raise it without one)."""
        if self._on_error is None:
            raise error
        self._on_error(stage, obj, error, _KEEP_CACHED if stage == "transform" else _NO_KEY)

    def add(self, obj: Any) -> None:
        """Queue an ``Added`` delta."""
        self._change(obj, DeltaType.ADDED)

    def update(self, obj: Any) -> None:
        """Queue an ``Updated`` delta."""
        self._change(obj, DeltaType.UPDATED)

    def _change(self, obj: Any, delta_type: DeltaType) -> None:
        stage = "transform"
        try:
            if self._transform is not None:
                obj = self._transform(obj)
            stage = "key"
            key = obj.key if type(obj) is DeletedFinalStateUnknown else self._key_func(obj)
        except Exception as error:
            self._failed(stage, obj, error)
            return
        if self._deliver is not None:
            with self._lock:
                if self._inline_ready_locked(key):
                    self._deliver_locked(key, delta_type, obj)
                    return
        budget = self._budget
        if budget is not None:
            budget.acquire()
        with self._lock:
            self._wait_for_room_locked()
            self._populated = True
            self._queue_locked(key, Delta(delta_type, obj))
            if budget is not None:
                if self._closed:  # nobody will pop it: hand the slot back at once
                    budget.release(1)
                else:
                    self._budgeted += 1

    # ------------------------------------------------------------------ inline delivery

    def deliver_inline(self, deliver: InlineFunc | None) -> None:
        """Let producers hand changes straight to ``deliver`` while nothing is queued (None: never).

        From then on, :meth:`add`, :meth:`update` and :meth:`delete` call
        ``deliver(key, delta_type, obj)`` on the producer's thread instead of
        queueing a delta, when the FIFO has synced (its first population was
        popped through), holds no pending delta, is not closed, and is not
        processing ``key`` in a :meth:`pop`; ``obj`` is the transformed object
        (or the tombstone, for a ``Deleted``). Otherwise the change is queued
        for :meth:`pop`.

        ``deliver`` runs while the FIFO's lock is held, so no :meth:`pop`,
        :meth:`resync` or other producer interleaves with it: it must be quick
        and must never call back into the FIFO (nor wait for a thread that
        does). It is the consumer's ``process`` for a single change and keeps
        its rules: the change is applied completely before it returns. It
        should not raise; if it does, the exception propagates to the producer
        (with ``requeue_on_error``, after the change was queued for a
        :meth:`pop`). A bounded FIFO's wait and a :class:`HandoffBudget` slot
        are skipped: nothing is left pending.
        """
        with self._lock:
            self._deliver = deliver

    def _inline_ready_locked(self, key: str) -> bool:
        """Whether a change of ``key`` may go to the inline consumer now (see :meth:`deliver_inline`). Lock held."""
        return (
            self._deliver is not None
            and not self._items
            and key not in self._processing
            and self._populated
            and not self._initial_population
            and not self._closed
        )

    def _deliver_locked(self, key: str, delta_type: DeltaType, obj: Any) -> None:
        """Hand one change to the inline consumer (lock held; :meth:`_inline_ready_locked` said yes)."""
        try:
            self._deliver(key, delta_type, obj)  # type: ignore[misc]
        except BaseException:
            if self._requeue_on_error:
                self._requeue_locked(key, (Delta(delta_type, obj),))
            raise

    def _downstream_state(self, key: str) -> tuple[bool, Any]:
        """(exists, object) for ``key`` as the consumer will hold it once in-flight work lands.

        Lock held. A key being processed is judged by its newest in-flight
        delta, because the consumer's store may not reflect it yet.
        """
        inflight = self._processing.get(key)
        if inflight is not None:
            newest = inflight[-1]
            if newest.type is _DELETED:
                return False, None
            return True, newest.object
        if self._known is None:
            return False, None
        obj = self._known.get_by_key(key)
        return obj is not None, obj

    def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` delta, unless the FIFO and the consumer already forgot the key.

        Objects are transformed; tombstones are queued as they are. With
        ``on_error``, an object whose transform fails is still deleted: the
        delta carries the consumer's last version of it, else the object as given.
        """
        fallback = False
        if not isinstance(obj, DeletedFinalStateUnknown) and self._transform is not None:
            try:
                obj = self._transform(obj)
            except Exception as error:
                if self._on_error is None:
                    raise
                self._on_error("transform", obj, error, "the object is deleted all the same")
                fallback = True
        try:
            key = self.key_of(obj)
        except Exception as error:
            if self._on_error is None:
                raise
            self._on_error("key", obj, error, _NO_KEY)
            return
        with self._lock:
            self._wait_for_room_locked()
            if fallback:
                exists, last = self._downstream_state(key)
                if exists:
                    obj = last
            if key not in self._items and not self._downstream_state(key)[0]:
                self._populated = True
                return  # never seen, or already deleted: nothing to tell the consumer
            if self._inline_ready_locked(key):
                self._deliver_locked(key, _DELETED, obj)
                return
            self._populated = True
            self._queue_locked(key, Delta(_DELETED, obj))

    def transform_listed(self, obj: Any) -> Any:
        """Transform one object of a list that the caller will hand to ``replace(..., transformed=True)``.

        For a producer that transforms a list as it decodes it, so that what
        the transform drops is freed before the whole list is read. Returns
        the transformed object. With ``on_error``, an object the transform
        fails on is reported (stage ``"transform"``) and a placeholder is
        returned in its place: :meth:`replace` leaves it out and keeps the
        consumer's version of it (no false deletion), exactly as when
        ``replace`` transforms the object itself. Without ``on_error`` the
        error propagates. To be called only by the producer thread that calls
        :meth:`replace`.
        """
        transform = self._transform
        if transform is None:
            return obj
        try:
            return transform(obj)
        except Exception as error:
            if self._on_error is None:
                raise
            self._on_error("transform", obj, error, _KEEP_CACHED)
            self._listed_failures += 1
            return _NotTransformed(self._key_or_none(obj))

    def replace(
        self, objects: Iterable[Any], resource_version: str = "", *, transformed: bool = False
    ) -> None:
        """A relist: ``Replaced`` for each object, tombstones for keys the list lacks.

        A key gets a ``Deleted`` delta with a :class:`DeletedFinalStateUnknown`
        when it is absent from ``objects`` and either has pending deltas whose
        newest is not already a deletion, or is held by ``known_objects``.
        ``resource_version`` is accepted for the Reflector's store protocol.
        ``transformed`` says that every object already went through
        :meth:`transform_listed`: the transform is not applied again.
        """
        kept: list[
            str
        ] = []  # keys of listed objects whose transform failed: the cached version stays
        objects = objects if isinstance(objects, (list, tuple)) else list(objects)
        placeholders, self._listed_failures = self._listed_failures, 0
        if transformed and placeholders:
            keyed = self._admit_listed(objects, kept, None)
        else:
            keyed = self._key_listed(objects, None if transformed else self._transform, kept)
        with self._lock:
            items = self._items
            queue = self._queue
            new_keys: set[str] = set(kept)
            add_key = new_keys.add
            for key, delta in keyed:
                add_key(key)
                deltas = items.get(key)
                if deltas is None:  # the common case: append without the per-key notify
                    items[key] = [delta]
                    queue.append(key)
                    self._pending += 1
                else:
                    self._queue_locked(key, delta)
            if self._waiters and keyed:
                self._cond.notify_all()
            # Queued keys the list lacks: their newest pending state is the last known.
            for key in [k for k in self._items if k not in new_keys]:
                newest = self._items[key][-1]
                if newest.type is _DELETED:
                    continue
                last = newest.object
                if isinstance(last, DeletedFinalStateUnknown):
                    last = last.obj
                self._queue_locked(key, Delta(_DELETED, DeletedFinalStateUnknown(key, last)))
            # Keys only the consumer (or an in-flight pop) knows about.
            candidates: list[str] = list(self._known.list_keys()) if self._known is not None else []
            candidates.extend(self._processing)
            for key in candidates:
                if key in new_keys or key in self._items:
                    continue
                exists, last = self._downstream_state(key)
                if exists:
                    self._queue_locked(key, Delta(_DELETED, DeletedFinalStateUnknown(key, last)))
            if not self._populated:
                self._populated = True
                self._initial_population = len(self._queue)

    def _key_listed(
        self, objects: list | tuple, transform: Callable[[Any], Any] | None, kept: list[str]
    ) -> list[tuple[str, Delta]]:
        """``(key, Replaced delta)`` for each listed object, transforming each exactly once.

        The fast path transforms all, then keys all (listed objects are never
        tombstones, so the key function is called directly), outside the lock.
        Once something fails, the rest goes one object at a time
        (:meth:`_admit_listed`), and what was transformed is not transformed again.
        """
        key_func = self._key_func
        replaced = DeltaType.REPLACED
        done: list | tuple = objects
        try:
            if transform is not None:
                done = []
                append = done.append
                for o in objects:
                    append(transform(o))
            return [(key_func(o), Delta(replaced, o)) for o in done]
        except Exception as error:
            if self._on_error is None:
                raise
            rest: list | tuple = ()
            if done is not objects:  # the transform was running
                failed = len(done)
                if failed < len(objects):  # ... and failed on this object
                    self._on_error("transform", objects[failed], error, _KEEP_CACHED)
                    key = self._key_or_none(objects[failed])
                    if key is not None:
                        kept.append(key)
                    rest = objects[failed + 1 :]
            return self._admit_listed(done, kept, None) + self._admit_listed(rest, kept, transform)

    def _admit_listed(
        self, objects: list | tuple, kept: list[str], transform: Callable[[Any], Any] | None
    ) -> list[tuple[str, Delta]]:
        """The slow path of :meth:`replace` once an object failed: one object at a time.

        An object whose transform fails is left out, but its key (from the
        object as listed) goes to ``kept``: it is still on the server, so the
        consumer keeps the version it has instead of seeing a deletion. So
        does an object :meth:`transform_listed` failed on (its placeholder).
        Only called with ``on_error``.
        """
        key_func = self._key_func
        on_error = self._on_error
        assert on_error is not None
        keyed = []
        for o in objects:
            if type(o) is _NotTransformed:
                if o.key is not None:
                    kept.append(o.key)
                continue
            if transform is not None:
                try:
                    out = transform(o)
                except Exception as error:
                    on_error("transform", o, error, _KEEP_CACHED)
                    key = self._key_or_none(o)
                    if key is not None:
                        kept.append(key)
                    continue
            else:
                out = o
            try:
                keyed.append((key_func(out), Delta(DeltaType.REPLACED, out)))
            except Exception as error:
                on_error("key", out, error, _NO_KEY)
        return keyed

    def _key_or_none(self, obj: Any) -> str | None:
        """The key of a listed object, or None when it has none (it cannot be in the consumer's store)."""
        try:
            return self._key_func(obj)
        except Exception:
            return None

    def resync(self) -> None:
        """Queue ``Sync`` for each object in ``known_objects`` with nothing pending or in flight.

        A key with pending deltas is skipped: replaying the consumer's
        (older) copy after them would make it go back in time.
        """
        if self._known is None:
            return
        with self._lock:
            for key in self._known.list_keys():
                if key in self._items or key in self._processing:
                    continue
                obj = self._known.get_by_key(key)
                if obj is None:
                    continue
                self._queue_locked(key, Delta(DeltaType.SYNC, obj))

    # ------------------------------------------------------------------ consumer side

    def _next_key_locked(self) -> str | None:
        queue = self._queue
        if not queue:
            return None
        first = queue[0]
        if first not in self._processing:
            return queue.popleft()
        for i, key in enumerate(queue):
            if key not in self._processing:
                del queue[i]
                return key
        return None

    def pop(self, process: ProcessFunc, timeout: float | None = None) -> bool:
        """Hand the deltas of the oldest queued key to ``process(deltas, is_in_initial_list)``.

        Blocks until a key is ready, the FIFO is closed (raises
        :class:`FIFOClosedError`, even with keys still queued: a closed FIFO
        is being torn down) or ``timeout`` seconds pass (returns False).
        Returns True once ``process`` has returned; an exception from
        ``process`` propagates (see ``requeue_on_error``).
        ``is_in_initial_list`` is True while the FIFO has not synced, i.e.
        the key belongs to the initial population still being drained.
        """
        with self._lock:
            deadline = None if timeout is None else self._clock.now() + timeout
            while True:
                if self._closed:
                    raise FIFOClosedError("DeltaFIFO is closed")
                key = self._next_key_locked()
                if key is not None:
                    break
                if deadline is None:
                    remaining = None
                else:
                    remaining = deadline - self._clock.now()
                    if remaining <= 0:
                        return False
                self._waiters += 1
                try:
                    if remaining is None:
                        self._cond.wait()
                    else:
                        self._clock.wait(self._cond, remaining)
                finally:
                    self._waiters -= 1
            deltas = tuple(self._items.pop(key))
            self._pending -= len(deltas)
            handed = min(self._budgeted, len(deltas))
            self._budgeted -= handed
            if self._producers_waiting and self._pending <= self._max_pending // 2:  # type: ignore[operator]
                self._room.notify_all()
            self._processing[key] = deltas
            in_initial = not self._has_synced_locked()
        if handed and self._budget is not None:
            self._budget.release(handed)
        requeued = False
        try:
            process(deltas, in_initial)
        except BaseException:
            if self._requeue_on_error:
                with self._lock:
                    self._requeue_locked(key, deltas)
                    requeued = True
            raise
        finally:
            with self._lock:
                del self._processing[key]
                if self._initial_population > 0 and not requeued:
                    self._initial_population -= 1
                if self._waiters:
                    # a pop may be waiting for this key to be free
                    self._cond.notify_all()
        return True

    def _requeue_locked(self, key: str, deltas: tuple[Delta, ...]) -> None:
        newer = self._items.get(key)
        self._pending += len(deltas)
        if newer is None:
            self._items[key] = list(deltas)
            self._queue.appendleft(key)
            return
        merged = list(deltas)
        for d in newer:
            if d.type is _DELETED and merged and merged[-1].type is _DELETED:
                if not isinstance(d.object, DeletedFinalStateUnknown):
                    merged[-1] = d
                self._pending -= 1
                continue
            merged.append(d)
        self._items[key] = merged

    # ------------------------------------------------------------------ state

    def _has_synced_locked(self) -> bool:
        return self._populated and self._initial_population == 0

    def has_synced(self) -> bool:
        """True once the first :meth:`replace` (or any earlier add/update/delete) has been popped through."""
        with self._lock:
            return self._has_synced_locked()

    def close(self) -> None:
        """Close the FIFO: every blocked and future :meth:`pop` raises :class:`FIFOClosedError`.

        Producers waiting for room in a bounded FIFO return (their delta is
        queued, and never popped).
        """
        with self._lock:
            self._closed = True
            self._cond.notify_all()
            self._room.notify_all()
            handed, self._budgeted = self._budgeted, 0
        if handed and self._budget is not None:
            self._budget.release(handed)

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        """Number of keys with pending deltas."""
        with self._lock:
            return len(self._queue)

    def list_keys(self) -> list[str]:
        """Keys with pending deltas, in queue order."""
        with self._lock:
            return list(self._queue)

    def get_by_key(self, key: str) -> tuple[Delta, ...] | None:
        """The pending deltas of ``key`` (a snapshot), or None."""
        with self._lock:
            deltas = self._items.get(key)
            return tuple(deltas) if deltas is not None else None

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"<DeltaFIFO queued={len(self._queue)} processing={len(self._processing)} "
                f"synced={self._has_synced_locked()} closed={self._closed}>"
            )
