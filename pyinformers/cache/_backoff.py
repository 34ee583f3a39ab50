"""``Backoff``: jittered exponential delays that forget old failures.

The reflector waits between failed attempts with this policy (client-go's
reflector uses the same shape): the first delay is ``initial`` (0.8 s), each
further consecutive failure doubles it up to ``maximum`` (30 s), and each delay
is stretched by a random factor in ``[1, 1 + jitter)`` (never past ``maximum``)
so that many clients failing together do not retry in lockstep. A stretch of
``reset_after`` seconds without a failure means the trouble is over: the next
failure starts again from ``initial``. :meth:`reset` forgets at once (after a
clear success).

Not thread-safe: one owner (the reflector's thread) calls it.
"""

from __future__ import annotations

import random

from pyinformers.clock import REAL_CLOCK, Clock

__all__ = ["Backoff"]


class Backoff:
    """Delays for consecutive failures: ``initial * factor**n``, capped, jittered, reset by time."""

    def __init__(
        self,
        *,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.2,
        reset_after: float | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or maximum < initial:
            raise ValueError(
                f"need 0 < initial <= maximum, got initial={initial} maximum={maximum}"
            )
        if factor < 1:
            raise ValueError(f"factor must be >= 1, got {factor}")
        if jitter < 0:
            raise ValueError(f"jitter must be >= 0, got {jitter}")
        self.initial = float(initial)
        self.maximum = float(maximum)
        self.factor = float(factor)
        self.jitter = float(jitter)
        #: a failure-free stretch this long resets the sequence (default: 2 x maximum)
        self.reset_after = float(reset_after) if reset_after is not None else 2.0 * self.maximum
        self._clock = clock or REAL_CLOCK
        self._rng = rng or random.Random()
        self._failures = 0  # consecutive failures counted since the last reset
        self._last_failure: float | None = None  # clock.now() of the last next() call

    @property
    def failures(self) -> int:
        """Consecutive failures since the last reset (a quiet stretch resets lazily, at the next failure)."""
        return self._failures

    def peek(self) -> float:
        """The un-jittered delay the next failure would get (for health checks and logs)."""
        failures = self._failures
        if (
            self._last_failure is not None
            and self._clock.now() - self._last_failure >= self.reset_after
        ):
            failures = 0
        return min(self.maximum, self.initial * self.factor**failures)

    def next(self) -> float:
        """Record a failure and return how long to wait before the next attempt."""
        now = self._clock.now()
        if self._last_failure is not None and now - self._last_failure >= self.reset_after:
            self._failures = 0
        base = min(self.maximum, self.initial * self.factor ** min(self._failures, 64))
        self._failures += 1
        self._last_failure = now
        if self.jitter:
            base = min(self.maximum, base * (1.0 + self.jitter * self._rng.random()))
        return base

    def reset(self) -> None:
        """Forget past failures: the next delay is ``initial`` again."""
        self._failures = 0
        self._last_failure = None

    def __repr__(self) -> str:
        return f"<Backoff failures={self._failures} next~{self.peek():.2f}s max={self.maximum}s>"
