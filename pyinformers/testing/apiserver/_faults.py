"""Fault injection for the in-process API server, switchable at run time.

All faults are off by default. Tests flip them while the server runs::

    server.faults.error_rate = 0.2        # 20% of API requests answer 500
    server.faults.throttle_rate = 0.1     # 10% answer 429 with Retry-After
    server.faults.retry_after = 2         # ... seconds in that header
    server.faults.latency = 0.05          # every request waits 50 ms first
    server.faults.stall_watches = True    # open watches keep the connection, send nothing
    server.faults.drop_watch_probability = 0.01  # each event batch may cut its watch
    server.faults.drop_watches()          # cut every open watch now
    server.faults.reset()                 # all off again

Faults apply to resource requests (not to discovery or ``/version``) and
never to the server's own internal writers (garbage collector, workload
simulator). Dropped watches are cut abruptly, like a broken connection, so
clients see a network error, not a clean end of stream.

``seed`` makes the random choices reproducible. Thread-safe: attribute writes
are atomic; :meth:`Faults.roll` serialises access to the random generator.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

__all__ = ["Faults"]


class Faults:
    """The server's fault knobs (see the module docstring)."""

    def __init__(self, *, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._drop_all: Callable[[], int] | None = None
        self.reset()

    def reset(self) -> None:
        """Switch every fault off."""
        self.error_rate: float = 0.0
        self.throttle_rate: float = 0.0
        self.retry_after: int = 1
        self.latency: float = 0.0
        self.stall_watches: bool = False
        self.drop_watch_probability: float = 0.0

    def seed(self, seed: int) -> None:
        with self._lock:
            self._random.seed(seed)

    def drop_watches(self) -> int:
        """Cut every open watch connection now; returns how many were cut."""
        drop = self._drop_all
        return drop() if drop is not None else 0

    def roll(self, probability: float) -> bool:
        """True with the given probability (0 never, 1 always)."""
        if probability <= 0.0:
            return False
        if probability >= 1.0:
            return True
        with self._lock:
            return self._random.random() < probability

    def active(self) -> bool:
        return bool(
            self.error_rate
            or self.throttle_rate
            or self.latency
            or self.stall_watches
            or self.drop_watch_probability
        )

    def _bind(self, drop_all: Callable[[], int]) -> None:
        self._drop_all = drop_all

    def __repr__(self) -> str:
        return (
            f"<Faults error_rate={self.error_rate} throttle_rate={self.throttle_rate} "
            f"retry_after={self.retry_after} latency={self.latency} stall_watches={self.stall_watches} "
            f"drop_watch_probability={self.drop_watch_probability}>"
        )
