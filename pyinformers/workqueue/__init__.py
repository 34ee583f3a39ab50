"""Work queues with client-go's semantics: dedup, one worker per item, delays, rate limits.

* :class:`Queue` -- fair, deduplicating FIFO; an item is never processed by
  two workers at once (``add``, ``get``, ``done``, ``shutdown``,
  ``shutdown_with_drain``).
* :class:`DelayingQueue` -- adds ``add_after(item, delay)``.
* :class:`RateLimitingQueue` -- adds ``add_rate_limited``, ``forget``,
  ``num_requeues`` on top of a :class:`RateLimiter`.
* Rate limiters: :class:`ItemExponentialFailureRateLimiter`,
  :class:`ItemFastSlowRateLimiter`, :class:`BucketRateLimiter`,
  :class:`MaxOfRateLimiter`, :func:`default_controller_rate_limiter`.
* Named queues report Prometheus metrics (:mod:`pyinformers.workqueue._metrics`).

This package imports nothing from :mod:`pyinformers.cache` or above.
"""

from pyinformers._exports import publish
from pyinformers.workqueue._delaying import DelayingQueue
from pyinformers.workqueue._queue import Queue
from pyinformers.workqueue._rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from pyinformers.workqueue._rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
]

publish(globals(), __all__)
