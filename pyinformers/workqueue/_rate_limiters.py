"""Rate limiters: how long an item waits before it is retried.

This module owns the :class:`RateLimiter` protocol and its policies, after
client-go's ``default_rate_limiters.go``:

* :class:`ItemExponentialFailureRateLimiter` -- per item, ``base * 2**failures``
  capped at ``max_delay``;
* :class:`ItemFastSlowRateLimiter` -- per item, a fast delay for the first
  attempts, then a slow one;
* :class:`BucketRateLimiter` -- one token bucket for all items (overall qps);
* :class:`MaxOfRateLimiter` -- the longest delay of several limiters;
* :func:`default_controller_rate_limiter` -- exponential (5 ms to 1000 s) and a
  10 qps / 100 burst bucket, combined with max-of.

Every limiter is thread-safe (one lock each). Delays are seconds (floats).
The per-retry paths take their locks with ``acquire()``/``release()`` rather
than ``with``, which costs about 100 ns more on CPython 3.11 (see
:mod:`pyinformers.workqueue._queue`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.workqueue._time import now_function

__all__ = [
    "RateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "BucketRateLimiter",
    "MaxOfRateLimiter",
    "default_controller_rate_limiter",
]


@runtime_checkable
class RateLimiter(Protocol):
    """What a :class:`~pyinformers.workqueue.RateLimitingQueue` asks of a policy."""

    def when(self, item: Hashable) -> float:
        """Record one more failure (or request) of ``item``; return seconds to wait."""

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded): its next ``when`` starts afresh."""

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are being tracked."""


def _check_delay(what: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        raise ValueError(f"{what} must be a number of seconds, got {value!r}")
    if value < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    return float(value)


class _PerItemFailures:
    """The failure count both per-item limiters keep, and their ``forget``/``num_requeues``.

    Invariant: ``_failures[item]`` is the number of ``when(item)`` calls since
    the item was last forgotten; items with no failures are absent.
    Thread-safe: one lock guards the counts.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def _record_failure(self, item: Hashable) -> int:
        """Count one more failure of ``item``; return how many came before it."""
        lock = self._lock
        lock.acquire()  # not ``with``: see the module docstring
        try:
            failures = self._failures
            earlier = failures.get(item, 0)
            failures[item] = earlier + 1
        finally:
            lock.release()
        return earlier

    def forget(self, item: Hashable) -> None:
        # Every successful reconcile forgets its key, and almost none has failures: a lock-free
        # membership test first (a dict lookup is atomic). A when() racing with it for the same
        # item is ordered as if it came after the forget, which is what it is.
        if item not in self._failures:
            return
        lock = self._lock
        lock.acquire()
        try:
            self._failures.pop(item, None)
        finally:
            lock.release()

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemExponentialFailureRateLimiter(_PerItemFailures):
    """Per-item exponential backoff: ``base_delay * 2**n`` after n earlier failures.

    The first ``when(item)`` returns ``base_delay``, the next twice that, and
    so on, never more than ``max_delay``. :meth:`forget` resets the item.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self._base = _check_delay("base_delay", base_delay)
        self._max = _check_delay("max_delay", max_delay)
        if self._base > self._max:
            raise ValueError(
                f"base_delay ({base_delay!r} s) must not exceed max_delay ({max_delay!r} s)"
            )
        super().__init__()

    def when(self, item: Hashable) -> float:
        exp = self._record_failure(item)
        if exp >= 1024:  # 2.0**1024 overflows a float; the cap was reached long ago
            return self._max
        return min(self._base * 2.0**exp, self._max)

    def __repr__(self) -> str:
        return (
            f"<ItemExponentialFailureRateLimiter base={self._base}s max={self._max}s "
            f"tracking={len(self._failures)}>"
        )


class ItemFastSlowRateLimiter(_PerItemFailures):
    """Per item: ``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._fast = _check_delay("fast_delay", fast_delay)
        self._slow = _check_delay("slow_delay", slow_delay)
        if isinstance(max_fast_attempts, bool) or not isinstance(max_fast_attempts, int):
            raise ValueError(f"max_fast_attempts must be an int, got {max_fast_attempts!r}")
        if max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts must not be negative, got {max_fast_attempts!r}")
        self._max_fast = max_fast_attempts
        super().__init__()

    def when(self, item: Hashable) -> float:
        attempts = self._record_failure(item) + 1
        return self._fast if attempts <= self._max_fast else self._slow

    def __repr__(self) -> str:
        return (
            f"<ItemFastSlowRateLimiter fast={self._fast}s slow={self._slow}s "
            f"max_fast_attempts={self._max_fast} tracking={len(self._failures)}>"
        )


class BucketRateLimiter:
    """One token bucket for all items: at most ``qps`` per second, bursts of ``burst``.

    Reservation semantics (as ``golang.org/x/time/rate``'s ``Reserve``): the
    bucket starts full; each :meth:`when` takes the next token, which may
    lie in the future, and returns the seconds until it is available. A
    caller that gets a delay has already paid for its token, so callers
    queue up behind each other at ``1/qps`` intervals.

    It tracks no items: :meth:`forget` does nothing and :meth:`num_requeues`
    is always 0.

    Invariant: ``_tokens`` is the bucket's level at clock time ``_last``,
    at most ``burst``; it is negative when tokens were reserved ahead.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if (
            isinstance(qps, bool)
            or not isinstance(qps, (int, float))
            or math.isnan(qps)
            or qps <= 0
        ):
            raise ValueError(f"qps must be a positive number, got {qps!r}")
        if math.isinf(qps):
            raise ValueError("qps must be finite (use no bucket for an unlimited rate)")
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(f"burst must be an int of at least 1, got {burst!r}")
        self._qps = float(qps)
        self._burst = burst
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        self._now = now_function(self._clock)
        self._lock = threading.Lock()
        self._burst_f = float(burst)
        self._tokens = self._burst_f
        self._last = self._now()

    def when(self, item: Hashable) -> float:
        now = self._now()
        lock = self._lock
        lock.acquire()  # not ``with``: see the module docstring
        try:
            elapsed = now - self._last
            tokens = self._tokens
            if elapsed > 0:
                tokens += elapsed * self._qps
                if tokens > self._burst_f:
                    tokens = self._burst_f
                self._last = now
            tokens -= 1.0
            self._tokens = tokens
        finally:
            lock.release()
        return 0.0 if tokens >= 0 else -tokens / self._qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<BucketRateLimiter qps={self._qps} burst={self._burst} tokens={self._tokens:.2f}>"


class MaxOfRateLimiter:
    """The longest delay any of ``limiters`` asks for; every limiter sees every call.

    Thread-safety: as thread-safe as its limiters (all of ours are).
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one rate limiter")
        for limiter in limiters:
            if not isinstance(limiter, RateLimiter):
                raise ValueError(
                    f"not a rate limiter (needs when, forget, num_requeues): {limiter!r}"
                )
        self._limiters: tuple[RateLimiter, ...] = limiters
        # Bound once: when() and forget() run for every retry and every success. A bucket
        # tracks no item, so forgetting in it is skipped.
        self._whens = tuple(limiter.when for limiter in limiters)
        self._forgets = tuple(
            limiter.forget for limiter in limiters if not isinstance(limiter, BucketRateLimiter)
        )
        if len(self._forgets) == 1:  # the default limiter: forget is the one per-item limiter's
            self.forget = self._forgets[0]  # type: ignore[method-assign]

    @property
    def limiters(self) -> tuple[RateLimiter, ...]:
        return self._limiters

    def when(self, item: Hashable) -> float:
        longest = 0.0
        for when in self._whens:
            delay = when(item)
            if delay > longest:
                longest = delay
        return longest

    def forget(self, item: Hashable) -> None:
        for forget in self._forgets:
            forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)

    def __repr__(self) -> str:
        return f"<MaxOfRateLimiter {', '.join(map(repr, self._limiters))}>"


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's default: per-item exponential backoff from 5 ms to 1000 s, and an
    overall 10 qps bucket with a burst of 100, whichever delays longer."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )
