"""Authenticate and authorize ``/metrics`` scrapes through the API server, as controller-runtime's filter does.

:class:`ApiServerAuth` is a :data:`~pyinformers.manager._probes.Guard` for
the metrics server. For each request it:

1. takes the bearer token from ``Authorization`` (scheme case-insensitive);
   none: **401**;
2. asks the API server who that is with a ``TokenReview``
   (``authentication.k8s.io/v1``); not authenticated: **401**;
3. asks whether that user may ``get`` the request's path as a non-resource
   URL with a ``SubjectAccessReview`` (``authorization.k8s.io/v1``,
   ``nonResourceAttributes: {path: /metrics, verb: get}``); denied: **403**;
4. lets the request through.

A scraper therefore needs a ClusterRole with ``nonResourceURLs: ["/metrics"]``
and ``verbs: ["get"]`` bound to its ServiceAccount (the samples' deploy
manifests ship one, ``metrics-reader``); the operator itself needs ``create``
on tokenreviews and subjectaccessreviews, which ``python -m pyinformers rbac``
adds when ``--metrics-secure`` is on.

When the API server cannot be asked (network error, or the operator lacks
those two permissions), the answer is **500** and the error is logged,
rate-limited, naming the missing permission when the server said 403.
Decisions are cached per token (by SHA-256, never the token itself) for
``cache_ttl`` seconds (10 by default, like the API server's own delegated
authentication), bounded to ``cache_size`` tokens, so a scrape every few
seconds costs two reviews per ``cache_ttl``, not two per scrape.

Thread-safety: one lock guards the cache; reviews run outside it.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pyinformers.api._errors import ApiError, Forbidden

__all__ = ["ApiServerAuth", "TOKEN_REVIEWS", "SUBJECT_ACCESS_REVIEWS"]

log = logging.getLogger("pyinformers.manager._metrics_auth")

_TEXT = "text/plain; charset=utf-8"
_UNAUTHORIZED = (401, _TEXT, b"Unauthorized\n")


def _resources() -> tuple:
    from pyinformers.api._resource import Resource

    return (
        Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False),
        Resource(
            "authorization.k8s.io",
            "v1",
            "subjectaccessreviews",
            "SubjectAccessReview",
            namespaced=False,
        ),
    )


TOKEN_REVIEWS, SUBJECT_ACCESS_REVIEWS = _resources()


def bearer_token(headers: Any) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive), or None."""
    value = headers.get("Authorization") if headers is not None else None
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class ApiServerAuth:
    """A guard that lets through only callers the API server authenticates and authorizes.

    :param token_reviews: a client whose ``create(body)`` posts a TokenReview.
    :param access_reviews: a client whose ``create(body)`` posts a SubjectAccessReview.

    Use :meth:`for_api_client` to make both from an ``ApiClient``.
    """

    def __init__(
        self,
        token_reviews: Any,
        access_reviews: Any,
        *,
        cache_ttl: float = 10.0,
        cache_size: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._token_reviews = token_reviews
        self._access_reviews = access_reviews
        self._ttl = float(cache_ttl)
        self._size = int(cache_size)
        self._clock = clock
        self._lock = threading.Lock()
        # (sha256(token), path, verb) -> (expires_at, answer or None)
        self._cache: collections.OrderedDict[tuple, tuple[float, tuple | None]] = (
            collections.OrderedDict()
        )
        self._last_error_log = float("-inf")

    @classmethod
    def for_api_client(cls, api_client: Any, **options: Any) -> ApiServerAuth:
        from pyinformers.api._client import ResourceClient

        return cls(
            ResourceClient(api_client, TOKEN_REVIEWS),
            ResourceClient(api_client, SUBJECT_ACCESS_REVIEWS),
            **options,
        )

    def __call__(self, method: str, path: str, headers: Any) -> tuple[int, str, bytes] | None:
        token = bearer_token(headers)
        if token is None:
            return _UNAUTHORIZED
        verb = "get" if method in ("GET", "HEAD") else method.lower()
        key = (hashlib.sha256(token.encode()).hexdigest(), path, verb)
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        try:
            answer = self._decide(token, path, verb)
        except (ApiError, OSError, ValueError) as err:
            self._log_failure(err)
            return (500, _TEXT, b"cannot authorize the request (see the operator's log)\n")
        with self._lock:
            self._cache[key] = (now + self._ttl, answer)
            self._cache.move_to_end(key)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return answer

    def _decide(self, token: str, path: str, verb: str) -> tuple[int, str, bytes] | None:
        review = self._token_reviews.create(
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            }
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return _UNAUTHORIZED
        user = status.get("user") or {}
        spec: dict[str, Any] = {
            "user": user.get("username", ""),
            "groups": list(user.get("groups") or []),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        access = self._access_reviews.create(
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        )
        if (access.get("status") or {}).get("allowed"):
            return None
        message = f"Forbidden (user={spec['user']}, verb={verb}, resource=, subresource=)\n"
        return (403, _TEXT, message.encode())

    def _log_failure(self, err: BaseException) -> None:
        now = self._clock()
        with self._lock:
            if now - self._last_error_log < 60:
                return
            self._last_error_log = now
        if isinstance(err, Forbidden):
            log.error(
                "cannot authorize /metrics requests: the API server refused a review (%s); the operator needs "
                "'create' on tokenreviews.authentication.k8s.io and subjectaccessreviews.authorization.k8s.io "
                "(python -m pyinformers rbac adds them with --metrics-secure)",
                err,
            )
        else:
            log.error("cannot authorize /metrics requests: %s", err)

    def __repr__(self) -> str:
        return f"<ApiServerAuth ttl={self._ttl:g}s cached={len(self._cache)}>"
