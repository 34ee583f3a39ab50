"""What a reconcile returns: :class:`Result`.

A controller's ``reconcile(key)`` tells its worker what to do with the key next:

* return ``None`` or ``Result()`` -- done. The key is ``forget``-ed: its
  rate-limiter history is reset, and it is not looked at again until an
  event enqueues it.
* return ``Result(requeue=True)`` -- not done, nothing went wrong either
  (waiting on something that has no event, say): the key is re-added through
  the rate limiter, so repeated requeues back off exponentially.
* return ``Result(requeue_after=seconds)`` -- done for now, look again after
  ``seconds`` (a certificate to renew, a timeout to enforce): the key is
  forgotten and re-added after that delay. It takes precedence over
  ``requeue``.
* raise -- failure: the key is re-added through the rate limiter and the
  error is logged once, with the key and the traceback.

Values are immutable and hashable; share them freely between threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Result"]


@dataclass(frozen=True)
class Result:
    """The outcome of one reconcile of one key.

    ``requeue_after`` is a non-negative, finite number of seconds, or None.
    ``Result(requeue_after=0)`` means "look again as soon as possible",
    without rate limiting (the key is forgotten and re-added at once).
    """

    requeue: bool = False
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.requeue, bool):
            raise TypeError(f"Result.requeue must be a bool, not {type(self.requeue).__name__}")
        if self.requeue_after is not None:
            if isinstance(self.requeue_after, bool) or not isinstance(
                self.requeue_after, (int, float)
            ):
                raise TypeError(
                    "Result.requeue_after must be a number of seconds or None, "
                    f"not {type(self.requeue_after).__name__}"
                )
            if not math.isfinite(self.requeue_after) or self.requeue_after < 0:
                raise ValueError(
                    f"Result.requeue_after must be a finite number of seconds >= 0, got {self.requeue_after!r}"
                )

    @property
    def done(self) -> bool:
        """True when the key needs nothing more (neither requeue nor requeue_after)."""
        return not self.requeue and self.requeue_after is None
