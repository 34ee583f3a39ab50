"""The tombstone: what a delete carries when the deletion itself was missed.

A base module of the cache: the store unwraps tombstones on delete, the
DeltaFIFO makes them on a relist, handlers receive them; none of those
needs the others for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DeletedFinalStateUnknown"]


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """Tombstone for an object deleted while nobody was watching.

    ``obj`` is the last state known (from the consumer's store or the queue);
    it may be stale. ``key`` is the object's key. Immutable.
    """

    key: str
    obj: Any
