"""A shortcut for reading a clock on hot paths (private to the work queues)."""

from __future__ import annotations

import time
from collections.abc import Callable

from pyinformers.clock import Clock, RealClock


def now_function(clock: Clock) -> Callable[[], float]:
    """``clock.now``, or :func:`time.monotonic` itself for the real clock.

    ``RealClock.now`` is ``time.monotonic`` behind one Python call; skipping
    that call matters where a clock is read once per item.
    """
    if type(clock) is RealClock:
        return time.monotonic
    return clock.now
