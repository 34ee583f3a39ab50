"""The rate-limiting queue: :class:`DelayingQueue` plus a retry policy.

This module owns :class:`RateLimitingQueue` (client-go's
``rate_limiting_queue.go``): ``add_rate_limited(item)`` asks the rate limiter
how long the item should wait and adds it after that delay; ``forget(item)``
tells the limiter the item succeeded, so its next failure starts from the
shortest delay again; ``num_requeues(item)`` reports the tracked failures.

A controller's worker calls ``add_rate_limited`` when a reconcile fails and
``forget`` when it succeeds -- and ``done`` in both cases.

Threading: as :class:`DelayingQueue`; the rate limiter has its own lock.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from pyinformers.clock import Clock
from pyinformers.workqueue._delaying import DelayingQueue
from pyinformers.workqueue._rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(DelayingQueue):
    """A :class:`DelayingQueue` whose retries are paced by a :class:`RateLimiter`.

    ``rate_limiter`` defaults to :func:`default_controller_rate_limiter` on the
    queue's clock.

    Thread-safety: all methods may be called concurrently from any thread.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter | None = None,
        name: str | None = None,
        *,
        clock: Clock | None = None,
        metrics_registry: Any = None,
    ) -> None:
        if rate_limiter is not None and not isinstance(rate_limiter, RateLimiter):
            raise ValueError(
                f"not a rate limiter (needs when, forget, num_requeues): {rate_limiter!r}"
            )
        super().__init__(name, clock=clock, metrics_registry=metrics_registry)
        self._rate_limiter: RateLimiter = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=self._clock)
        )
        if type(self).forget is RateLimitingQueue.forget:
            # A worker forgets every key it finished: skip this method's own call.
            self.forget = self._rate_limiter.forget  # type: ignore[method-assign]

    @property
    def rate_limiter(self) -> RateLimiter:
        return self._rate_limiter

    def add_rate_limited(self, item: Hashable) -> None:
        """Add ``item`` after the delay the rate limiter gives it (counting one more failure)."""
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        """Tell the rate limiter ``item`` succeeded: stop tracking its failures.

        This does not remove the item from the queue; the worker still calls
        :meth:`done`.
        """
        self._rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """How many times ``item`` was rate-limited since it was last forgotten."""
        return self._rate_limiter.num_requeues(item)
