"""Which shard a key is in, and which member owns which shard: stable hashing shared by every replica.

Keys map to a fixed number of shards (:func:`shard_of`); shards map to the
live members by *balanced rendezvous hashing* (:func:`assign`): every
(shard, member) pair gets a pseudo-random score, and pairs are taken from the
highest score down, each member accepting shards up to its fair share
(``shards // members``, one more for ``shards % members`` of them). So

* every replica that sees the same member set computes the same assignment
  (hashes are BLAKE2b of the names, not Python's per-process ``hash``);
* the spread is as even as the shard count allows (24 shards over 3
  members: 8 each);
* a member joining or leaving moves few shards (each shard keeps its highest
  scoring member unless that member is full), close to the 1/n minimum.

Pure functions, thread-safe.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["assign", "shard_of", "score"]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def shard_of(key: str, shards: int) -> int:
    """The shard (0 .. shards-1) of ``key``; the same in every process."""
    return _hash(key) % shards


def score(shard: int, member: str) -> int:
    """The rendezvous score of ``member`` for ``shard`` (higher wins)."""
    return _hash(f"{shard}\x00{member}")


def assign(shards: int, members: Iterable[str]) -> dict[int, str]:
    """``{shard: member}`` for every shard, balanced over ``members`` (empty when there are none)."""
    ordered = sorted(set(members))
    if not ordered or shards <= 0:
        return {}
    base, extra = divmod(shards, len(ordered))
    pairs = sorted(((score(s, m), s, m) for s in range(shards) for m in ordered), reverse=True)
    owner: dict[int, str] = {}
    load = dict.fromkeys(ordered, 0)
    full_plus_one = 0  # members that took base + 1 shards (at most `extra` may)
    for _, shard, member in pairs:
        if shard in owner:
            continue
        count = load[member]
        if count < base:
            pass
        elif count == base and full_plus_one < extra:
            full_plus_one += 1
        else:
            continue
        owner[shard] = member
        load[member] = count + 1
        if len(owner) == shards:
            break
    return owner
