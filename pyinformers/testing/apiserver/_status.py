"""Status objects: how the in-process API server reports every failure.

Every error the server answers with is a ``meta.k8s.io/v1`` ``Status`` whose
``code`` is the HTTP status and whose ``reason`` is one of the machine-readable
reasons the Kubernetes API defines (``NotFound``, ``AlreadyExists``,
``Conflict``, ``Invalid``, ``BadRequest``, ``Expired``, ...). The server's
modules raise :class:`StatusError`; the HTTP layer turns it into a response
(or, inside a watch stream, into an ``ERROR`` event).

Pure values; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "go_quote",
    "StatusError",
    "status_object",
    "success_status",
    "bad_request",
    "not_found",
    "already_exists",
    "conflict",
    "invalid",
    "expired",
    "method_not_allowed",
    "unsupported_media_type",
    "forbidden",
    "internal_error",
]


def status_object(
    code: int,
    reason: str,
    message: str,
    *,
    details: Mapping[str, Any] | None = None,
) -> dict:
    """A failure ``Status`` object as the API server sends it."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if not reason:  # a few internal errors of the real server carry no reason
        del status["reason"]
    if details is not None:
        status["details"] = dict(details)
    return status


def success_status(*, details: Mapping[str, Any] | None = None) -> dict:
    """The ``Status`` a successful delete of an already-gone object returns."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details:
        status["details"] = dict(details)
    return status


class StatusError(Exception):
    """A request failed with an HTTP status and a Kubernetes ``Status`` body.

    ``retry_after`` (seconds), when set, is sent as a ``Retry-After`` header
    (429 and some 5xx answers).
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.metadata = dict(metadata) if metadata else None
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details is not None else None
        self.retry_after = retry_after

    @property
    def status(self) -> dict:
        """The ``Status`` object for this error."""
        status = status_object(self.code, self.reason, self.message, details=self.details)
        if self.metadata:
            status["metadata"] = dict(self.metadata)
        return status

    def __repr__(self) -> str:
        return f"StatusError(code={self.code}, reason={self.reason!r}, message={self.message!r})"


def _details(kind: str, group: str, name: str | None, causes: list | None = None) -> dict:
    details: dict[str, Any] = {"kind": kind} if kind else {}
    if group:
        details["group"] = group
    if name:
        details["name"] = name
    if causes:
        details["causes"] = causes
    return details


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def forbidden(
    message: str, *, kind: str = "", group: str = "", name: str | None = None
) -> StatusError:
    return StatusError(
        403, "Forbidden", message, details=_details(kind, group, name) if kind else None
    )


def not_found(
    kind: str, group: str, name: str | None, *, message: str | None = None
) -> StatusError:
    """404 for one object, or (``name=None``) for an unknown resource or path."""
    qualified = f"{kind}.{group}" if group else kind
    if message is None:
        message = (
            f'{qualified} "{name}" not found'
            if name
            else "the server could not find the requested resource"
        )
    return StatusError(404, "NotFound", message, details=_details(kind, group, name))


def already_exists(kind: str, group: str, name: str) -> StatusError:
    qualified = f"{kind}.{group}" if group else kind
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified} "{name}" already exists',
        details=_details(kind, group, name),
    )


def conflict(kind: str, group: str, name: str, reason: str) -> StatusError:
    qualified = f"{kind}.{group}" if group else kind
    message = f'Operation cannot be fulfilled on {qualified} "{name}": {reason}'
    return StatusError(409, "Conflict", message, details=_details(kind, group, name))


_CAUSE_PREFIXES = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueTooLong": "Too long",
    "FieldValueDuplicate": "Duplicate value",
}


def cause_message(reason: str, detail: str) -> str:
    """A cause's message as the real server words it: its type's prefix, then the detail."""
    prefix = _CAUSE_PREFIXES.get(reason)
    if prefix is None or detail.startswith(prefix):
        return detail
    return f"{prefix}: {detail}" if detail else prefix


def invalid(
    kind: str,
    group: str,
    name: str,
    causes: list[tuple[str, str, str]],
    *,
    summary_causes: int | None = None,
) -> StatusError:
    """422 Invalid; ``causes`` are ``(reason, field, detail)`` triples (reason like ``FieldValueInvalid``).

    Each cause's message gets its type's prefix (``Forbidden: ``, ``Required
    value``, ...) unless the detail has it; the Status message lists the first
    ``summary_causes`` causes (default: all), in brackets when more than one.
    """
    qualified = f"{kind}.{group}" if group else kind
    worded = [(reason, field, cause_message(reason, detail)) for reason, field, detail in causes]
    listed = worded[: summary_causes or len(worded)]
    summary = ", ".join(f"{field}: {message}" for _, field, message in listed)
    if len(listed) > 1:
        summary = f"[{summary}]"
    message = f'{qualified} "{name}" is invalid: {summary}'
    cause_dicts = [
        {"reason": reason, "message": msg, "field": field} for reason, field, msg in worded
    ]
    return StatusError(422, "Invalid", message, details=_details(kind, group, name, cause_dicts))


def expired(message: str, *, metadata: Mapping[str, Any] | None = None) -> StatusError:
    """410 Gone with reason ``Expired``: a resourceVersion or continue token older than the compaction point.

    ``metadata`` goes into the Status (a fresh ``continue`` token for an expired one).
    """
    return StatusError(410, "Expired", message, metadata=metadata)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message, details={})


def unsupported_media_type(
    message: str = "415: Unsupported Media Type", *, details: Mapping[str, Any] | None = None
) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", message, details=details)


def internal_error(message: str) -> StatusError:
    """500 InternalError (what the server answers for its own bugs)."""
    return StatusError(500, "InternalError", message, details={"causes": [{"message": message}]})


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(value: str) -> str:
    """``value`` in double quotes as Go's ``%q`` prints it (the escapes messages of a real server show)."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'
