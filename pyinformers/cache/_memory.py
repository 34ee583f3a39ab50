"""What an informer's cache costs in memory: a sampled, cheap estimate.

:func:`estimate_cache_memory` answers "how many bytes does this cache hold?"
without walking it: it measures a random sample of the cached objects
(:data:`DEFAULT_SAMPLE`, 64 by default) and scales the mean up to the number
of objects. Measuring one object walks its dicts and lists, adding
``sys.getsizeof`` of every container, string and number (values reachable
twice inside one object count once), plus what the store spends per object
(:data:`PER_OBJECT_OVERHEAD`: the key string, the store's and the indexes'
table entries). Dict keys of at most :data:`SHARED_KEY_LENGTH` characters are
not counted: ``orjson`` shares such keys (``metadata``, ``name``, ``labels``
...) between all decoded objects through its key cache. A string that
sampled objects share (interned by :func:`~pyinformers.cache.share_metadata_strings`)
is counted once for the sample.

Cost: about 100-170 us per sampled 3 KB object on a loaded two-core host,
so some 10-15 ms per estimate whatever the cache's size, plus a copy of its
key list (about 1 ms per 10,000 objects).
Informers keep the last estimate for a while (:data:`ESTIMATE_MAX_AGE`), so
a metrics scrape every few seconds costs nothing more.

Accuracy: live Python bytes, within some 10-20% for objects alike in shape
(measured against ``tracemalloc`` in ``benchmarks/bench_cache_memory.py``).
RSS can be higher: the allocator keeps freed blocks (see
``docs/operations.rst``). A cache of very different objects (a few huge
Secrets among many small ones) is estimated with a larger spread.

Thread-safety: reads the indexer through its public, locked methods; the
objects are only read.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CacheMemory",
    "DEFAULT_SAMPLE",
    "ESTIMATE_MAX_AGE",
    "PER_OBJECT_OVERHEAD",
    "SHARED_KEY_LENGTH",
    "estimate_cache_memory",
    "human_bytes",
    "summed",
    "object_bytes",
]

#: Objects measured per estimate.
DEFAULT_SAMPLE = 64
#: Seconds an informer reuses its last estimate.
ESTIMATE_MAX_AGE = 30.0
#: Bytes the store spends per object besides the object: the store's and two indexes' table
#: entries and set slots (the key string itself is measured).
PER_OBJECT_OVERHEAD = 200
#: Dict keys this short are shared between decoded objects (orjson's key cache): not counted.
SHARED_KEY_LENGTH = 64

_getsizeof = sys.getsizeof


def object_bytes(obj: Any, seen: set[int] | None = None) -> int:
    """The bytes of one decoded JSON object: its containers, strings and numbers (see the module docstring).

    ``seen`` (ids already counted) is shared across the objects of one
    estimate, so that a string several objects share (an interned label
    value, say) is counted once for all of them.
    """
    total = 0
    if seen is None:
        seen = set()
    stack = [obj]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        ident = id(item)
        if ident in seen:
            continue
        seen.add(ident)
        total += _getsizeof(item)
        t = type(item)
        if t is dict:
            for key, value in item.items():
                if len(key) > SHARED_KEY_LENGTH:
                    total += _getsizeof(key)
                if type(value) in (dict, list) or (type(value) is str and len(value) > 1):
                    push(value)
                elif value is not None and value is not True and value is not False:
                    total += _small(value)
        elif t is list:
            for value in item:
                if type(value) in (dict, list) or type(value) is str:
                    push(value)
                elif value is not None and value is not True and value is not False:
                    total += _small(value)
    return total


def _small(value: Any) -> int:
    """Numbers: small ints are shared by CPython, larger ones and floats are not."""
    if type(value) is int and -5 <= value <= 256:
        return 0
    return _getsizeof(value)


@dataclass(frozen=True)
class CacheMemory:
    """An estimate of one cache: ``objects`` cached, about ``bytes`` held, from ``sampled`` objects measured."""

    objects: int
    bytes: int
    sampled: int

    @property
    def per_object(self) -> int:
        return self.bytes // self.objects if self.objects else 0

    def __str__(self) -> str:
        return f"{self.objects:,} objects, about {human_bytes(self.bytes)}"


def summed(parts: Iterable[CacheMemory]) -> CacheMemory:
    """One estimate of several caches (the informers a composite informer is made of)."""
    parts = list(parts)
    return CacheMemory(
        sum(p.objects for p in parts), sum(p.bytes for p in parts), sum(p.sampled for p in parts)
    )


def human_bytes(n: float) -> str:
    """``310 MB``, ``12 KB``, ``1.4 GB`` (powers of 1,000, two significant digits at least)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"
    return f"{int(n)} B"


def estimate_cache_memory(
    indexer: Any,
    *,
    sample: int = DEFAULT_SAMPLE,
    rng: random.Random | None = None,
    extra_per_object: int = 0,
) -> CacheMemory:
    """A :class:`CacheMemory` for ``indexer`` (anything with ``list_keys()`` and ``get_by_key()``).

    ``extra_per_object`` adds what else the informer keeps per object (the
    mutation detector's fingerprints).
    """
    if sample < 1:
        raise ValueError(f"sample must be at least 1, got {sample!r}")
    keys = indexer.list_keys()
    count = len(keys)
    if count == 0:
        return CacheMemory(0, 0, 0)
    chosen = keys if count <= sample else (rng or random).sample(keys, sample)
    measured = 0
    total = 0
    seen: set[int] = set()  # shared: what sampled objects share is counted once
    for key in chosen:
        obj = indexer.get_by_key(key)
        if obj is None:  # deleted meanwhile
            continue
        measured += 1
        total += object_bytes(obj, seen) + _getsizeof(key)
    if measured == 0:
        return CacheMemory(count, 0, 0)
    mean = total / measured + PER_OBJECT_OVERHEAD + extra_per_object
    return CacheMemory(count, int(mean * count), measured)
