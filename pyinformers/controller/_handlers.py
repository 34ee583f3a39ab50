"""Handlers: turn informer events into work-queue keys.

A handler answers one question -- *which keys does this event wake?* -- in
:meth:`EventHandler.keys`. :meth:`EventHandler.bind` couples it with a queue
and a list of predicates, giving the object an informer calls
(``informer.add_event_handler(handler.bind(queue))``; ``Controller.watch``
does exactly that):

* :class:`EnqueueForObject` -- the object's own key.
* :class:`EnqueueForOwner` -- the keys of the object's owners of one kind,
  from ``metadata.ownerReferences`` (by default only the controller
  reference), so a change to, or the deletion of, a child wakes its parent.
* :class:`EnqueueMapped` -- whatever keys a function computes from the
  object (relations by label selector, by name, by index).

On an update, handlers that derive keys from the object's content
(:class:`EnqueueForOwner`, :class:`EnqueueMapped`) look at both the old and
the new object, so when an object moves from one owner to another, or drops
its owner reference, both owners are woken. Deletions arrive as objects or as
``DeletedFinalStateUnknown`` tombstones; both work (the tombstone's last
known object is used).

Threading: an informer calls a bound handler one event at a time, from that
handler's own delivery thread -- or, for the built-in handlers without
predicates (:class:`EnqueueForObject`, :class:`EnqueueForOwner`), from the
thread that applies the change to the cache (``runs_inline``: the reflector's
for a watch event, the informer's for a backlog): they only compute keys and
make a non-blocking ``queue.add``, so a thread and a wake-up per event would
be pure cost. A bound handler keeps no mutable state
and can be shared; the queue does its own locking. A handler never lets an
exception escape into the informer: an object it cannot map (no name, a
mapping function that raised) is logged and skipped, and the informer goes
on delivering.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from pyinformers.api import meta
from pyinformers.cache import ChangeKind
from pyinformers.controller._change import Change
from pyinformers.controller._predicates import Predicate

__all__ = [
    "BoundHandler",
    "EnqueueForObject",
    "EnqueueForOwner",
    "EnqueueMapped",
    "EventHandler",
    "KeyQueue",
]

_log = logging.getLogger("pyinformers.controller._handlers")


class KeyQueue(Protocol):
    """What a handler needs from a queue: ``add(key)`` (thread-safe, deduplicating)."""

    def add(self, item: Any) -> None: ...


class EventHandler:
    """Base class: maps an :class:`Change` to the keys it wakes.

    Subclasses implement :meth:`keys`. Instances are immutable configuration
    and may be bound to several queues.
    """

    def keys(self, event: Change) -> Iterable[str]:
        """The keys ``event`` wakes (may be empty; duplicates are harmless)."""
        raise NotImplementedError

    def bind(self, queue: KeyQueue, predicates: Sequence[Predicate] = ()) -> BoundHandler:
        """The informer-facing handler: filter with ``predicates``, then ``queue.add`` every key."""
        return BoundHandler(self, queue, predicates)


class BoundHandler:
    """An :class:`EventHandler` bound to a queue and predicates: what informers call.

    ``on_add``/``on_update``/``on_delete`` build an :class:`Change`, drop it
    unless every predicate returns True, then add each key to the queue. A
    predicate or mapper that raises is logged (with the event) and the event
    is dropped; nothing propagates into the informer.
    """

    __slots__ = ("handler", "queue", "predicates", "runs_inline")

    def __init__(
        self, handler: EventHandler, queue: KeyQueue, predicates: Sequence[Predicate] = ()
    ) -> None:
        if not isinstance(handler, EventHandler):
            raise TypeError(
                f"handler must be an EventHandler (EnqueueForObject, ...), got {handler!r}"
            )
        if not callable(getattr(queue, "add", None)):
            raise TypeError(f"queue must have an add(key) method, got {queue!r}")
        preds = tuple(predicates)
        for p in preds:
            if not callable(p):
                raise TypeError(f"a predicate must be a callable Change -> bool, got {p!r}")
        self.handler = handler
        self.queue = queue
        self.predicates = preds
        #: Called on the informer thread (no thread of its own): only built-in key mappings
        #: without user predicates, whose work is a non-blocking ``queue.add``.
        self.runs_inline = not preds and type(handler) in _INLINE_HANDLERS

    def on_add(self, obj: Mapping[str, Any], is_in_initial_list: bool = False) -> None:
        self.dispatch(
            Change(ChangeKind.ADD, obj, None, is_in_initial_list=bool(is_in_initial_list))
        )

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.dispatch(Change(ChangeKind.UPDATE, new, old))

    def on_delete(self, obj: Any) -> None:
        try:
            event = Change.from_delete(obj)
        except TypeError:
            _log.error(
                "%r: dropping a delete notification that carries no object: %s",
                self,
                meta.describe(obj),
            )
            return
        self.dispatch(event)

    def dispatch(self, event: Change) -> None:
        """Filter ``event`` through the predicates and enqueue its keys."""
        try:
            for predicate in self.predicates:
                if not predicate(event):
                    return
            keys = self.handler.keys(event)
            add = self.queue.add
            for key in keys:
                add(key)
        except Exception:
            _log.exception("%r: dropping %r: a predicate or the key mapping failed", self, event)

    def __repr__(self) -> str:
        names = ", ".join(getattr(p, "__name__", repr(p)) for p in self.predicates)
        return f"<BoundHandler {self.handler!r} predicates=[{names}] queue={self.queue!r}>"


class EnqueueForObject(EventHandler):
    """Enqueue the event's own object key (``namespace/name`` or ``name``)."""

    def keys(self, event: Change) -> Iterable[str]:
        if event.obj is None:  # a tombstone the cache had no object for
            return (event.tombstone_key,) if event.tombstone_key else ()
        if event.tombstone_key:
            return (event.tombstone_key,)
        return (meta.object_key(event.obj),)

    def bind(self, queue: KeyQueue, predicates: Sequence[Predicate] = ()) -> BoundHandler:
        if predicates:
            return BoundHandler(self, queue, predicates)
        return _ObjectKeyHandler(self, queue)

    def __repr__(self) -> str:
        return "EnqueueForObject()"


class _ObjectKeyHandler(BoundHandler):
    """The unfiltered :class:`EnqueueForObject`: the hot path, without building Events.

    Same behaviour as :class:`BoundHandler` with no predicates; it skips the
    Change allocation because an informer for a busy resource calls it for
    every change. Running inline, it is handed the key the informer computed
    (:meth:`on_event_key`) instead of the objects.
    """

    __slots__ = ()

    def on_event_key(self, key: str) -> None:
        """An add, update or delete of the object whose cache key is ``key``: enqueue it."""
        self.queue.add(key)

    def on_add(self, obj: Mapping[str, Any], is_in_initial_list: bool = False) -> None:
        self._add(obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._add(new)

    def _add(self, obj: Mapping[str, Any]) -> None:
        try:
            key = meta.object_key(obj)
        except ValueError:
            _log.exception("%r: dropping an object without a usable key", self)
            return
        self.queue.add(key)


def _group_of(api_version: Any) -> str | None:
    if not isinstance(api_version, str) or not api_version:
        return None
    group, sep, _version = api_version.rpartition("/")
    return group if sep else ""


class EnqueueForOwner(EventHandler):
    """Enqueue the keys of the object's owners of kind ``owner_kind`` in group ``owner_group``.

    ``owner_kind`` is a kind name (``"Deployment"``), or a
    :class:`~pyinformers.api._resource.Resource`, which then supplies the
    group and the scope too. ``owner_group`` is the API group ("" for core,
    ``"apps"``, ``"example.com"``); an owner reference matches when its
    ``kind`` equals ``owner_kind`` and the group part of its ``apiVersion``
    equals ``owner_group`` (any version).

    With ``controller_only=True`` (the default) only the controller reference
    counts: the first reference marked ``controller: true``, the one
    :func:`~pyinformers.api.meta.controller_of` returns (the API server allows
    only one; should an object carry several, the later ones are ignored, as
    controller-runtime does). With False every matching reference counts.

    Keys: a namespaced owner lives in its child's namespace (Kubernetes
    forbids cross-namespace owner references), so its key is
    ``child-namespace/owner-name``; for a cluster-scoped owner
    (``owner_namespaced=False``, or a cluster-scoped ``Resource``) the key is
    the owner's name. A cluster-scoped child cannot have a namespaced owner;
    such references are ignored.
    """

    def __init__(
        self,
        owner_kind: str | Any,
        *,
        owner_group: str | None = None,
        controller_only: bool = True,
        owner_namespaced: bool | None = None,
    ) -> None:
        if isinstance(owner_kind, str):
            kind, group, namespaced = owner_kind, owner_group or "", True
        elif hasattr(owner_kind, "kind") and hasattr(owner_kind, "group"):  # a Resource
            kind, group, namespaced = (
                owner_kind.kind,
                owner_kind.group,
                bool(getattr(owner_kind, "namespaced", True)),
            )
            if owner_group is not None and owner_group != group:
                raise ValueError(
                    f"owner_group={owner_group!r} contradicts the resource's group {group!r}"
                )
        else:
            raise TypeError(f"owner_kind must be a kind name or a Resource, got {owner_kind!r}")
        if not kind:
            raise ValueError("owner_kind must not be empty")
        if "/" in group:
            raise ValueError(
                f"owner_group {group!r} must be a group name without a version (e.g. 'apps')"
            )
        self.owner_kind: str = kind
        self.owner_group: str = group
        self.controller_only: bool = bool(controller_only)
        self.owner_namespaced: bool = (
            namespaced if owner_namespaced is None else bool(owner_namespaced)
        )

    def owner_keys(self, obj: Mapping[str, Any] | None) -> list[str]:
        """The keys of ``obj``'s matching owners (empty for None or an unowned object)."""
        if not obj:
            return []
        md = obj.get("metadata") or {}
        refs = md.get("ownerReferences")
        if not refs:
            return []
        child_ns = md.get("namespace")
        if self.controller_only:
            controller = meta.controller_of(obj)
            refs = [controller] if controller is not None else []
        keys = []
        for ref in refs:
            if (
                ref.get("kind") != self.owner_kind
                or _group_of(ref.get("apiVersion")) != self.owner_group
            ):
                continue
            name = ref.get("name")
            if not name:
                continue
            if not self.owner_namespaced:
                keys.append(name)
            elif child_ns:
                keys.append(f"{child_ns}/{name}")
            # else: a cluster-scoped child naming a namespaced owner: invalid, ignored.
        return keys

    def keys(self, event: Change) -> Iterable[str]:
        return _old_and_new_keys(self.owner_keys, event)

    def __repr__(self) -> str:
        return (
            f"EnqueueForOwner({self.owner_kind!r}, owner_group={self.owner_group!r}, "
            f"controller_only={self.controller_only}, owner_namespaced={self.owner_namespaced})"
        )


def _old_and_new_keys(
    keys_of: Callable[[Mapping[str, Any] | None], list[str]], change: Change
) -> list[str]:
    """The keys of the new object, then those of the old one not already named (updates only).

    A relation that changed (a new owner, a remapped key) wakes both sides; a
    resync (old *is* new) maps once.
    """
    keys = keys_of(change.obj)
    if change.type is ChangeKind.UPDATE and change.old is not change.obj:
        for key in keys_of(change.old):
            if key not in keys:
                keys.append(key)
    return keys


#: Handlers whose keys() runs no user code: their bound handlers run on the informer thread.
_INLINE_HANDLERS = (EnqueueForObject, EnqueueForOwner)


class EnqueueMapped(EventHandler):
    """Enqueue the keys ``fn(obj)`` returns.

    ``fn`` takes an object (a cached dict, never to be mutated) and returns
    an iterable of keys, a single key string, or None for none. On an update
    both the old and the new object are mapped, so a relation that changed
    wakes both sides. On a delete the last known object is mapped (a
    tombstone without an object maps to nothing). ``fn`` runs on the
    informer's delivery thread: keep it quick (read listers, no API calls).
    """

    def __init__(self, fn: Callable[[Mapping[str, Any]], Iterable[str] | str | None]) -> None:
        if not callable(fn):
            raise TypeError(f"EnqueueMapped needs a callable obj -> keys, got {fn!r}")
        self.fn = fn

    def _map(self, obj: Mapping[str, Any] | None) -> list[str]:
        if obj is None:
            return []
        result = self.fn(obj)
        if result is None:
            return []
        if isinstance(result, str):
            return [result]
        keys = list(result)
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f"{self!r}: the mapping function returned a non-string key {key!r}")
        return keys

    def keys(self, event: Change) -> Iterable[str]:
        return _old_and_new_keys(self._map, event)

    def __repr__(self) -> str:
        return f"EnqueueMapped({getattr(self.fn, '__qualname__', self.fn)!s})"
