"""What a process that caches a cluster does with CPython's cyclic garbage collector.

An informer cache holds every object of a resource, decoded from JSON into
dicts and lists: hundreds of thousands of container objects that live until
their next version replaces them. CPython's cyclic collector costs such a
process in two ways, both measured by ``make bench``:

* **filling** a cache with the collector running is several times slower,
  because each collection of the oldest generation re-traverses everything
  cached so far. The reflector and the informer therefore pause the collector
  while an initial list fills the cache (:func:`gc_paused`). This is always
  on: the pause is short, reference-counted across threads, and restores
  the collector exactly as it was.
* **steady state**: every cached version survives into the oldest
  generation, and CPython collects that generation whenever its newcomers
  reach a quarter of it. With a churning cache that is a full traversal of
  the cache every few thousand events: tens of microseconds per watch event
  on average, as much as decoding the event. Making full collections rare
  and moving the synced cache out of the collector's reach
  (:func:`tune_for_caches`, :func:`freeze_synced_caches`) removes that cost.

The steady-state settings are process-wide, so the library never applies them
on its own: the :class:`~pyinformers.manager.Manager` (which *is* the
application) applies them by default and undoes them when it stops; a program
that runs a :class:`~pyinformers.cache.SharedInformerFactory` without a
manager can call the two functions itself. What they trade: cyclic garbage
(rare in JSON-shaped data) waits longer to be collected, and cycles among
frozen objects are never collected (the cache is acyclic; the rest of what is
alive at freeze time is modules, classes and other long-lived state).

Thread-safety: every function may be called from any thread.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = [
    "RARE_FULL_COLLECTIONS",
    "freeze_synced_caches",
    "gc_paused",
    "restore",
    "tune_for_caches",
]

#: Thresholds under which full collections become rare: the oldest generation is
#: examined only after a thousand collections of the middle one (CPython's default is 10).
RARE_FULL_COLLECTIONS: tuple[int, int, int] = (700, 10, 1000)

_pause_lock = threading.Lock()
_pause_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (reference counting still frees memory).

    Nestable and safe across threads: the collector is re-enabled when the last
    holder leaves, and only if it was enabled when the first one entered.
    """
    global _pause_depth, _was_enabled
    with _pause_lock:
        if _pause_depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pause_depth += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pause_depth -= 1
            if _pause_depth == 0 and _was_enabled:
                _promote_untraversed()
                gc.enable()


def _promote_untraversed() -> None:
    """Move every tracked object to the oldest generation without traversing it (pause lock held).

    What a pause leaves behind (a freshly filled cache: millions of
    containers) sits in the youngest generation, so the first collection
    after the pause would traverse all of it -- about 30 us per cached Pod,
    as much as the whole fill. Surviving that collection would only have
    promoted it to the oldest generation; ``freeze()`` then ``unfreeze()``
    does that in constant time. Cyclic garbage made during the pause is
    found by the next full collection instead. Skipped when objects are
    frozen (unfreezing would undo :func:`freeze_synced_caches`).
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def tune_for_caches(
    threshold: tuple[int, int, int] = RARE_FULL_COLLECTIONS,
) -> tuple[int, int, int]:
    """Make full collections rare; return the thresholds in force before, for :func:`restore`."""
    if len(threshold) != 3 or any(not isinstance(t, int) or t < 0 for t in threshold):
        raise ValueError(f"a GC threshold is three non-negative integers, got {threshold!r}")
    previous = gc.get_threshold()
    gc.set_threshold(*threshold)
    return previous


def freeze_synced_caches() -> int:
    """Move every object alive now (the synced caches among them) out of the collector's reach.

    Call it once the caches have synced. Later versions of cached objects are
    tracked as usual; frozen objects are still freed by reference counting
    when the cache drops them. Returns how many objects were frozen.
    """
    with _pause_lock:  # never between the freeze and unfreeze of _promote_untraversed
        gc.freeze()
    return gc.get_freeze_count()


def restore(threshold: tuple[int, int, int], *, unfreeze: bool = True) -> None:
    """Undo :func:`tune_for_caches` (and :func:`freeze_synced_caches` when ``unfreeze``)."""
    gc.set_threshold(*threshold)
    if unfreeze:
        gc.unfreeze()
