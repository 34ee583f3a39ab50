"""RFC 3339 times as the API server writes them: ``Time`` (seconds) and ``MicroTime``.

Kubernetes has two wire formats for a point in time:

* ``metav1.Time`` -- RFC 3339 to the second, always UTC: ``2026-01-01T00:00:00Z``
  (``creationTimestamp``, ``lastTransitionTime``, core/v1 Event timestamps);
* ``metav1.MicroTime`` -- the same with exactly six fractional digits:
  ``2026-01-01T00:00:00.000000Z`` (a Lease's ``renewTime``, an
  events.k8s.io/v1 Event's ``eventTime``).

:func:`format_time` and :func:`format_micro_time` write them from epoch
seconds (what :meth:`Clock.time` returns) or an aware ``datetime``;
:func:`parse_time` reads either (and any RFC 3339 offset, up to nine
fractional digits, which Go accepts and Python's parser would not) into an
aware UTC ``datetime``; :func:`parse_time_seconds` into epoch seconds. A
naive ``datetime`` is refused: the library never guesses a time zone.

Pure functions, thread-safe.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

__all__ = ["format_time", "format_micro_time", "parse_time", "parse_time_seconds", "TimeLike"]

#: Epoch seconds (``Clock.time()``, ``time.time()``) or an aware ``datetime``.
TimeLike = float | int | datetime

# RFC 3339 date-time: date, 'T', time, optional fraction (Go writes up to 9 digits), zone.
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})\Z"
)


def _as_datetime(value: TimeLike, what: str) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"{what}: a naive datetime ({value.isoformat()}) has no time zone; pass an aware one"
            )
        return value.astimezone(timezone.utc)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{what}: expected epoch seconds or an aware datetime, got {type(value).__name__}"
        )
    return datetime.fromtimestamp(value, tz=timezone.utc)


def format_time(value: TimeLike) -> str:
    """``value`` as a ``metav1.Time``: ``2026-01-01T00:00:00Z`` (UTC, fraction dropped, as Go truncates)."""
    return _as_datetime(value, "format_time").strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: TimeLike) -> str:
    """``value`` as a ``metav1.MicroTime``: UTC with exactly six fractional digits."""
    return _as_datetime(value, "format_micro_time").strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (``Time`` or ``MicroTime``) as an aware UTC ``datetime``.

    Accepts ``Z`` or a numeric offset and up to nine fractional digits
    (truncated to microseconds). Raises ValueError naming the text otherwise.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_time: expected an RFC 3339 string, got {type(text).__name__}")
    match = _RFC3339.match(text.strip())
    if match is None:
        raise ValueError(f"not an RFC 3339 time: {text!r} (expected e.g. 2026-01-01T00:00:00Z)")
    date, clock, fraction, zone = match.groups()
    micro = (fraction or "").ljust(6, "0")[:6]
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        parsed = datetime.fromisoformat(f"{date}T{clock}.{micro}{zone}")
    except ValueError as err:  # a month 13, a 25th hour
        raise ValueError(f"not an RFC 3339 time: {text!r} ({err})") from None
    return parsed.astimezone(timezone.utc)


def parse_time_seconds(text: str | None) -> float | None:
    """:func:`parse_time` as epoch seconds; None for None or an empty string (an unset time)."""
    if text is None or text == "":
        return None
    return parse_time(text).timestamp()
