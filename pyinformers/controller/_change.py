"""One informer notification as a value: :class:`Change` (its ``type`` a :class:`~pyinformers.cache.ChangeKind`).

Informers call handlers with three shapes of arguments (``on_add(obj,
is_in_initial_list)``, ``on_update(old, new)``, ``on_delete(obj_or_tombstone)``).
Predicates and key mappers would each have to handle all three, plus
tombstones, plus resyncs; instead the controller's handlers turn every
notification into one frozen :class:`Change` first, and predicates are plain
functions ``Change -> bool``.

* ``ADD``: ``obj`` is the new object, ``old`` is None.
* ``UPDATE``: ``obj`` is the new object, ``old`` the previous one. A periodic
  resync re-delivers the cached object as an update whose ``old`` *is*
  ``obj`` (the same dict); :attr:`Change.is_resync` tells.
* ``DELETE``: ``obj`` is the last state the cache knew. When the informer
  missed the deletion itself (the watch was down and a relist no longer
  found the object) it delivers a ``DeletedFinalStateUnknown`` tombstone;
  :func:`Change.from_delete` unwraps it, sets :attr:`Change.final_state_unknown`
  and keeps the tombstone's key.

Objects are the informer's cached dicts: shared, never to be mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyinformers.cache import ChangeKind

__all__ = ["Change", "unwrap_tombstone"]


def unwrap_tombstone(obj: Any) -> tuple[Mapping[str, Any] | None, str | None]:
    """Return ``(object, tombstone_key)`` for what ``on_delete`` received.

    A plain object comes back as ``(obj, None)``. A ``DeletedFinalStateUnknown``
    (anything that is not a mapping but carries ``key`` and ``obj``, so that
    tombstones from any cache implementation work) comes back as
    ``(tombstone.obj, tombstone.key)``; its ``obj`` may be None when the cache
    no longer had the object.
    """
    if isinstance(obj, Mapping):
        return obj, None
    inner = getattr(obj, "obj", None)
    key = getattr(obj, "key", None)
    if key is None and inner is None:
        raise TypeError(f"on_delete got neither an object nor a tombstone: {obj!r}")
    return inner, key


@dataclass(frozen=True)
class Change:
    """One notification: ``type``, the object, and (for updates) the old object.

    Immutable; equality compares the objects by value (rarely what you want
    on hot paths: compare fields instead).
    """

    type: ChangeKind
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None = None
    #: ADD only: the object came with the informer's initial list (or a relist).
    is_in_initial_list: bool = False
    #: DELETE only: the informer missed the deletion and ``obj`` is the last
    #: state it had (from a ``DeletedFinalStateUnknown`` tombstone).
    final_state_unknown: bool = False
    #: DELETE via tombstone only: the tombstone's key (usable when ``obj`` is None).
    tombstone_key: str | None = field(default=None, compare=False)

    @property
    def is_resync(self) -> bool:
        """True for a periodic resync: an update whose old and new object are the same dict."""
        return self.type is ChangeKind.UPDATE and self.old is self.obj

    @classmethod
    def from_add(cls, obj: Mapping[str, Any], is_in_initial_list: bool = False) -> Change:
        return cls(ChangeKind.ADD, obj, None, is_in_initial_list=bool(is_in_initial_list))

    @classmethod
    def from_update(cls, old: Mapping[str, Any], new: Mapping[str, Any]) -> Change:
        return cls(ChangeKind.UPDATE, new, old)

    @classmethod
    def from_delete(cls, obj_or_tombstone: Any) -> Change:
        obj, key = unwrap_tombstone(obj_or_tombstone)
        return cls(
            ChangeKind.DELETE, obj, None, final_state_unknown=key is not None, tombstone_key=key
        )

    def __repr__(self) -> str:
        meta = (self.obj or {}).get("metadata") or {}
        who = (
            f"{meta.get('namespace')}/{meta.get('name')}"
            if meta.get("namespace")
            else meta.get("name")
        )
        extra = " resync" if self.is_resync else ""
        extra += " tombstone" if self.final_state_unknown else ""
        return f"<Change {self.type.name} {who}{extra}>"
