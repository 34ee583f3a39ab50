"""Typed API errors: what the API server said, as exceptions a caller can catch by kind.

The Kubernetes API server answers a failed request with a ``Status`` object
(``{"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404,
"message": ..., "details": ...}``); a watch stream reports a failure the same
way, inside an ``ERROR`` event. :func:`error_from_status` turns either into one
of the classes below, so callers write ``except NotFound`` or ``except Gone``
instead of comparing status codes.

Network failures (refused connections, resets, timeouts) are *not* wrapped:
they stay the underlying ``urllib3``/``OSError`` exceptions. The reflector
relies on that split: an :class:`ApiError` is an answer from the server, any
other exception is a broken conversation.

Values only; no state, no threads: everything here is safe to share.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ApiError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "ApplyConflict",
    "AlreadyExists",
    "Gone",
    "Invalid",
    "TooManyRequests",
    "ServerError",
    "error_from_status",
    "parse_retry_after",
]


class ApiError(Exception):
    """An error answer from the API server.

    Attributes:
        code: the HTTP status code (or the ``code`` of the Status object).
        reason: the Status ``reason`` (``"NotFound"``, ``"Expired"`` ...), or "" if none.
        message: the human-readable Status ``message``.
        status: the whole Status object as a dict (``{}`` when the server sent none).
    """

    #: The HTTP code this class stands for (0 for the base class).
    default_code = 0

    def __init__(
        self,
        message: str = "",
        *,
        code: int | None = None,
        reason: str = "",
        status: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code: int = int(code if code is not None else self.default_code)
        self.reason: str = reason
        self.message: str = message
        self.status: dict = dict(status) if status else {}

    @property
    def details(self) -> dict:
        """The Status ``details`` (name, group, kind, causes), or ``{}``."""
        details = self.status.get("details")
        return details if isinstance(details, dict) else {}

    def __str__(self) -> str:
        text = f"({self.code}"
        if self.reason:
            text += f" {self.reason}"
        text += ")"
        if self.message:
            text += f" {self.message}"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, reason={self.reason!r}, message={self.message!r})"

    def __reduce__(
        self,
    ) -> tuple[Any, ...]:  # keep pickling (multiprocessing, pytest-xdist) working with kw-only args
        return (
            _rebuild,
            (type(self), self.message, self.code, self.reason, self.status, self.__dict__),
        )


def _rebuild(
    cls: type[ApiError],
    message: str,
    code: int | None,
    reason: str,
    status: Any,
    state: dict[str, Any],
) -> ApiError:
    error = cls.__new__(cls)
    ApiError.__init__(error, message, code=code, reason=reason, status=status)
    error.__dict__.update(state)
    return error


class BadRequest(ApiError):
    """400: the request was malformed (bad selector, bad patch ...)."""

    default_code = 400


class Unauthorized(ApiError):
    """401: no or bad credentials."""

    default_code = 401


class Forbidden(ApiError):
    """403: the credentials may not do this (RBAC)."""

    default_code = 403


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""

    default_code = 404


class MethodNotAllowed(ApiError):
    """405: the resource does not support this verb."""

    default_code = 405


class Conflict(ApiError):
    """409: a write lost a race (stale ``resourceVersion``, or a precondition failed)."""

    default_code = 409


class ApplyConflict(Conflict):
    """409 from a server-side apply: fields other managers own would change.

    ``conflicts`` lists ``(manager, field)`` pairs in the server's order, the
    manager as the server names it (``alpha``, or for an ``Update`` manager
    ``kubectl-edit`` -- the message adds its API version) and the field as a
    path (``.spec.template.spec.containers[name="app"].image``). Apply again
    with ``force=True`` to take them over, or leave those fields out.
    """

    @property
    def conflicts(self) -> list[tuple[str, str]]:
        out = []
        for cause in self.details.get("causes") or ():
            if isinstance(cause, Mapping) and cause.get("reason") == "FieldManagerConflict":
                out.append(
                    (_manager_in(str(cause.get("message") or "")), str(cause.get("field") or ""))
                )
        return out


def _manager_in(message: str) -> str:
    """The manager's name in a cause message: ``conflict with "alpha" using v1`` -> ``alpha``."""
    start = message.find('"')
    end = message.find('"', start + 1)
    return message[start + 1 : end] if start >= 0 and end > start else message


def _is_apply_conflict(body: Mapping[str, Any]) -> bool:
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    return any(
        isinstance(c, Mapping) and c.get("reason") == "FieldManagerConflict" for c in causes or ()
    )


class AlreadyExists(Conflict):
    """409 with reason ``AlreadyExists``: a create found an object of that name."""


class Gone(ApiError):
    """410: the requested resourceVersion (or continue token) is too old: reason ``Expired`` or ``Gone``.

    A watcher that sees this must relist; a paged list must restart from the top.
    """

    default_code = 410


class Invalid(ApiError):
    """422: the object failed validation; ``details["causes"]`` says which fields."""

    default_code = 422


class TooManyRequests(ApiError):
    """429: throttled. ``retry_after`` is the server's ``Retry-After`` in seconds, if it sent one."""

    default_code = 429

    def __init__(
        self, message: str = "", *, retry_after: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(message, **kwargs)
        self.retry_after: float | None = retry_after

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, retry_after={self.retry_after!r})"


class ServerError(ApiError):
    """5xx: the server failed (500 InternalError, 503 ServiceUnavailable, 504 Timeout ...)."""

    default_code = 500


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}

# Reasons that decide the class when the code alone does not (or is missing, as
# in some watch ERROR events that carry only a reason).
_BY_REASON: dict[str, type[ApiError]] = {
    "AlreadyExists": AlreadyExists,
    "Expired": Gone,
    "Gone": Gone,
    "NotFound": NotFound,
    "Conflict": Conflict,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "BadRequest": BadRequest,
    "MethodNotAllowed": MethodNotAllowed,
    "InternalError": ServerError,
    "ServiceUnavailable": ServerError,
    "Timeout": ServerError,
}


def parse_retry_after(value: Any) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP date); None if unusable."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return max(0.0, float(value))
    text = str(value).strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    import datetime as _dt

    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


def _header(headers: Any, name: str) -> Any:
    if not headers:
        return None
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    value = getter(name)
    if value is None and isinstance(headers, Mapping):  # a plain dict: case-insensitive by hand
        lowered = name.lower()
        for key, candidate in headers.items():
            if str(key).lower() == lowered:
                return candidate
    return value


def error_from_status(
    status: Mapping[str, Any] | None,
    code: int,
    *,
    headers: Any = None,
) -> ApiError:
    """Build the typed error for an HTTP ``code`` and the Status object the server sent.

    ``status`` may be None or not a Status (a proxy's HTML error page decoded to
    nothing useful): the code alone then picks the class. ``code`` 0 (unknown,
    e.g. a watch ERROR event without one) falls back to the Status ``code``,
    then to the ``reason``. ``headers`` (any mapping, case-insensitive lookups
    preferred) supplies ``Retry-After`` for :class:`TooManyRequests`; a Status
    ``details.retryAfterSeconds`` is used when the header is absent.
    """
    body: dict = dict(status) if isinstance(status, Mapping) else {}
    status_code = body.get("code")
    if not code and isinstance(status_code, int):
        code = status_code
    reason = body.get("reason") or ""
    if not isinstance(reason, str):
        reason = str(reason)
    message = body.get("message") or ""
    if not isinstance(message, str):
        message = str(message)

    cls: type[ApiError]
    if reason == "AlreadyExists" and code in (0, 409):
        cls = AlreadyExists
    elif code in (0, 409) and reason == "Conflict" and _is_apply_conflict(body):
        cls = ApplyConflict
    elif code in _BY_CODE:
        cls = _BY_CODE[code]
    elif code >= 500:
        cls = ServerError
    elif reason in _BY_REASON:
        cls = _BY_REASON[reason]
    else:
        cls = ApiError
    if not code:
        code = cls.default_code

    if not message:
        message = reason or f"HTTP {code}"

    if cls is TooManyRequests:
        retry_after = parse_retry_after(_header(headers, "Retry-After"))
        if retry_after is None:
            details = body.get("details")
            if isinstance(details, Mapping):
                retry_after = parse_retry_after(details.get("retryAfterSeconds"))
        return TooManyRequests(
            message, code=code, reason=reason, status=body, retry_after=retry_after
        )
    return cls(message, code=code, reason=reason, status=body)
