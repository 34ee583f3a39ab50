"""The vocabulary of the :class:`~pyinformers.cache.reflector._reflector.Reflector`: its states, its counters, and the store it writes.

The reflector is a state machine (see :mod:`pyinformers.cache.reflector._reflector` for
the transitions); :meth:`~pyinformers.cache.reflector._reflector.Reflector.step` returns
one of the frozen state values below, so tests can drive it one transition at
a time and assert on where it went. :class:`ReflectorStats` is a snapshot of
its counters; :class:`ReflectorStore` is the part of a store it writes.

Thread-safety: every value here is immutable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ReflectorStats",
    "ReflectorStore",
    "State",
    "NeedList",
    "Listing",
    "WatchListing",
    "Watching",
    "BackingOff",
    "Stopped",
]


class ReflectorStore(Protocol):
    """The part of a store a reflector writes (a DeltaFIFO, or an Indexer)."""

    def replace(self, objects: list, resource_version: str) -> None: ...

    def add(self, obj: dict) -> None: ...

    def update(self, obj: dict) -> None: ...

    def delete(self, obj: dict) -> None: ...

    def resync(self) -> None: ...


@dataclass(frozen=True)
class NeedList:
    """Start a full list (paged unless ``paged`` is False).

    ``consistent`` False (the first list) asks ``resourceVersion=0``: any
    recent state will do, so the API server answers from its watch cache
    without reading etcd (what client-go does; cheap on large clusters).
    True (a relist after 410 Gone) asks a consistent read (no
    resourceVersion): the cache must not go back in time.
    """

    paged: bool = True
    consistent: bool = False


@dataclass(frozen=True)
class Listing:
    """Fetch the next page of a list (``continue_`` None: the first page).

    ``resource_version`` is sent with the first page only ("0", or None for
    a consistent read); later pages carry the snapshot in their continue token.
    """

    continue_: str | None = None
    paged: bool = True
    resource_version: str | None = None


@dataclass(frozen=True)
class WatchListing:
    """Start a streaming list: a watch with ``sendInitialEvents=true``."""


@dataclass(frozen=True)
class Watching:
    """Open a watch from ``resource_version`` and consume it until it ends."""

    resource_version: str


@dataclass(frozen=True)
class BackingOff:
    """Wait until clock time ``until`` (``delay`` seconds after the failure), then go to ``then``."""

    until: float
    then: State
    delay: float
    reason: str = ""


@dataclass(frozen=True)
class Stopped:
    """Terminal: the reflector was stopped."""


State = NeedList | Listing | WatchListing | Watching | BackingOff | Stopped


@dataclass(frozen=True)
class ReflectorStats:
    """A snapshot of a reflector's counters (monotonic, since construction)."""

    lists: int = 0  # full lists completed (streaming lists included)
    watches: int = 0  # watch requests opened successfully
    events: int = 0  # ADDED/MODIFIED/DELETED events applied to the store
    bookmarks: int = 0  # BOOKMARK events seen
    errors: int = 0  # failed list/watch requests and streams (each one counted once)
    restarts: int = 0  # watches re-opened after a close, an error or a stall (no relist)
    relists: int = 0  # lists forced by 410 Gone/Expired (or an expired continue token)
    stalls: int = 0  # watches closed because they went silent
    resyncs: int = 0  # store.resync() calls
