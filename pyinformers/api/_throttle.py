"""A client-side throttle: a QPS/burst token bucket in front of every request of one ``ApiClient``.

What client-go's ``flowcontrol.NewTokenBucketRateLimiter`` is to a
``rest.Config``: :func:`set_client_throttle` gives an ``ApiClient`` a
:class:`TokenBucket`, and every request pyinformers sends through that client
(lists, watches, gets and writes, from every informer, controller, recorder
and lease sharing the client) first takes a token, waiting for one when the
bucket is empty. It guards the API server against a hot loop in the client.

**Off by default**, as in controller-runtime since v0.21: the API server's
Priority and Fairness (on by default since Kubernetes 1.20, GA in 1.29)
queues and sheds load per flow on the server, where the whole picture is,
and a client-side limit mostly slows a healthy controller down (client-go's
own default, 5 QPS with a burst of 10, holds 1,000 Deployment creates to
more than three minutes). Turn it on for servers without Priority and
Fairness or as a hard cap on one process
(``Manager(kube_api_qps=20, kube_api_burst=30)``, ``--kube-api-qps``).

Thread-safety: a :class:`TokenBucket` is shared by every thread of the
client; tokens are handed out under a lock, waiting happens outside it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from pyinformers.clock import Clock, RealClock

__all__ = ["TokenBucket", "client_throttle", "set_client_throttle"]

_THROTTLES: weakref.WeakKeyDictionary[Any, TokenBucket] = weakref.WeakKeyDictionary()


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved up; :meth:`wait` takes one, blocking until it is there.

    Starts full (a process may send ``burst`` requests at once). Tokens are
    reserved in order: a caller that must wait has its token set aside for it
    and sleeps until the moment it was due, so waiting callers are served
    first come, first served and the rate holds exactly over any window.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be positive, got {qps!r}")
        if int(burst) < 1:
            raise ValueError(f"burst must be at least 1, got {burst!r}")
        self._qps = float(qps)
        self._burst = int(burst)
        self._clock = clock or RealClock()
        self._lock = threading.Lock()
        self._tokens = float(self._burst)
        self._last = self._clock.now()

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return self._burst

    def _reserve(self) -> float:
        """Take a token (possibly one not there yet); seconds until it is due (0: now)."""
        with self._lock:
            now = self._clock.now()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def try_accept(self) -> bool:
        """Take a token if one is there now; never waits."""
        with self._lock:
            now = self._clock.now()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def wait(self) -> float:
        """Take a token, sleeping until it is due; the seconds slept."""
        delay = self._reserve()
        if delay > 0:
            self._clock.sleep(delay)
        return delay

    def __repr__(self) -> str:
        return f"TokenBucket(qps={self._qps:g}, burst={self._burst})"


def set_client_throttle(api_client: Any, throttle: TokenBucket | None) -> None:
    """Throttle every request pyinformers sends through ``api_client`` with ``throttle`` (None: off again)."""
    if throttle is None:
        _THROTTLES.pop(api_client, None)
    else:
        _THROTTLES[api_client] = throttle


def client_throttle(api_client: Any) -> TokenBucket | None:
    """The throttle of ``api_client``, or None (the default: none)."""
    try:
        return _THROTTLES.get(api_client)
    except TypeError:  # not weak-referenceable: never throttled
        return None
