"""Status conditions (``metav1.Condition``) on plain dicts, with apimachinery's semantics.

A condition list lives at ``status.conditions`` and holds at most one entry
per ``type``. The functions here take either that list or the whole object
(whose ``status.conditions`` they read, and :func:`set_status_condition`
creates), so a port of ``meta.SetStatusCondition(&obj.Status.Conditions, c)``
is ``set_status_condition(obj, type=..., status=..., reason=...)``.

:func:`set_status_condition` upserts by ``type`` and returns whether
anything changed. Its one subtle rule is Go's: ``lastTransitionTime`` moves
only when ``status`` changes; a new ``reason``, ``message`` or
``observedGeneration`` under the same status keeps the time of the last
transition. The time written is the ``now`` given (epoch seconds, e.g.
``controller.now()``, or an aware ``datetime``), else the wall clock.

Every condition written is first checked against the schema the API server
holds for ``metav1.Condition`` (a CRD using it refuses anything else, after
the write): ``type`` a qualified name, ``status`` one of True/False/Unknown,
``reason`` CamelCase (``^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$``), a
``message`` of at most 32768 characters and a non-negative
``observedGeneration``. A bad one raises :class:`ValueError` naming the
argument, before anything is changed.

These functions mutate the list (or object) they are given, by design:
deep-copy a cached object first. Not thread-safe on a shared list.
"""

from __future__ import annotations

import re
import time as _time
from collections.abc import Mapping, MutableMapping
from typing import Any

from pyinformers.api._times import TimeLike, format_time

__all__ = [
    "CONDITION_STATUSES",
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "remove_status_condition",
    "set_status_condition",
    "validate_condition",
]

#: The statuses a condition may have.
CONDITION_STATUSES = ("True", "False", "Unknown")

# The patterns and bounds of metav1.Condition's OpenAPI schema (what a CRD embedding it enforces).
_TYPE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_TYPE_MAX, _REASON_MAX, _MESSAGE_MAX = 316, 1024, 32768

Conditions = list | MutableMapping[str, Any]


def validate_condition(
    type: Any, status: Any, reason: Any, message: Any = "", observed_generation: Any = None
) -> None:
    """Raise ValueError, naming the argument, when a condition would not pass the API server's schema."""
    if not isinstance(type, str) or not type:
        raise ValueError(f"condition type is required (a non-empty string), got {type!r}")
    if len(type) > _TYPE_MAX or not _TYPE.match(type):
        raise ValueError(
            f"condition type {type!r} is not a qualified name (e.g. 'Ready' or 'example.com/Synced', "
            f"at most {_TYPE_MAX} characters)"
        )
    if status not in CONDITION_STATUSES:
        raise ValueError(
            f"condition {type}: status must be one of True, False, Unknown (strings), got {status!r}"
        )
    if not isinstance(reason, str) or not reason:
        raise ValueError(
            f"condition {type}: reason is required (a CamelCase word such as 'Available'), got {reason!r}"
        )
    if len(reason) > _REASON_MAX or not _REASON.match(reason):
        raise ValueError(
            f"condition {type}: reason {reason!r} must be CamelCase: a letter, then letters, digits, '_', ',' or ':' "
            f"(at most {_REASON_MAX} characters), e.g. 'MinimumReplicasAvailable'"
        )
    if not isinstance(message, str):
        raise ValueError(f"condition {type}: message must be a string, got {message!r}")
    if len(message) > _MESSAGE_MAX:
        raise ValueError(
            f"condition {type}: message is {len(message)} characters, at most {_MESSAGE_MAX} allowed"
        )
    if observed_generation is not None and (
        isinstance(observed_generation, bool)
        or not isinstance(observed_generation, int)
        or observed_generation < 0
    ):
        raise ValueError(
            f"condition {type}: observed_generation must be an int >= 0, got {observed_generation!r}"
        )


def _list_of(conditions: Any, *, create: bool) -> list | None:
    """The condition list itself: ``conditions`` if a list, else ``obj['status']['conditions']``."""
    if isinstance(conditions, list):
        return conditions
    if not isinstance(conditions, Mapping):
        raise TypeError(f"expected a condition list or an object, got {type(conditions).__name__}")
    status = conditions.get("status")
    if status is None:
        if not create:
            return None
        if not isinstance(conditions, MutableMapping):
            raise TypeError("cannot add a condition to a read-only object: deep-copy it first")
        status = conditions["status"] = {}
    if not isinstance(status, Mapping):
        raise TypeError(f"the object's status is a {type(status).__name__}, not an object")
    found = status.get("conditions")
    if found is None:
        if not create:
            return None
        found = status["conditions"] = []  # type: ignore[index]
    if not isinstance(found, list):
        raise TypeError(f"status.conditions is a {type(found).__name__}, not a list")
    return found


def find_status_condition(conditions: Any, type: str) -> dict[str, Any] | None:
    """The condition of ``type`` in ``conditions`` (a list or an object), or None. The entry itself, not a copy."""
    found = _list_of(conditions, create=False)
    for entry in found or ():
        if isinstance(entry, Mapping) and entry.get("type") == type:
            return entry  # type: ignore[return-value]
    return None


def set_status_condition(
    conditions: Conditions,
    *,
    type: str,
    status: str,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    now: TimeLike | None = None,
) -> bool:
    """Upsert the condition ``type``; True when the list changed.

    A new condition is appended with ``lastTransitionTime`` = ``now``. An
    existing one takes the new ``status`` (and ``now`` as its transition
    time, only if the status differs), ``reason``, ``message`` and, when
    given, ``observedGeneration``. Raises ValueError (see
    :func:`validate_condition`) before changing anything.
    """
    validate_condition(type, status, reason, message, observed_generation)
    found = _list_of(conditions, create=True)
    assert found is not None
    stamp = format_time(_time.time() if now is None else now)
    existing = find_status_condition(found, type)
    if existing is None:
        entry: dict[str, Any] = {"type": type, "status": status}
        if observed_generation is not None:
            entry["observedGeneration"] = observed_generation
        entry.update(lastTransitionTime=stamp, reason=reason, message=message)
        found.append(entry)
        return True
    changed = False
    if existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = stamp
        changed = True
    elif not existing.get(
        "lastTransitionTime"
    ):  # the schema requires one; repair a list written by hand
        existing["lastTransitionTime"] = stamp
        changed = True
    if existing.get("reason") != reason:
        existing["reason"] = reason
        changed = True
    if existing.get("message", "") != message:
        existing["message"] = message
        changed = True
    if (
        observed_generation is not None
        and existing.get("observedGeneration") != observed_generation
    ):
        existing["observedGeneration"] = observed_generation
        changed = True
    return changed


def remove_status_condition(conditions: Conditions, type: str) -> bool:
    """Remove the condition ``type``; True when there was one."""
    found = _list_of(conditions, create=False)
    if not found:
        return False
    for i, entry in enumerate(found):
        if isinstance(entry, Mapping) and entry.get("type") == type:
            del found[i]
            return True
    return False


def is_status_condition_present_and_equal(conditions: Any, type: str, status: str) -> bool:
    """True when the condition ``type`` exists with ``status``."""
    entry = find_status_condition(conditions, type)
    return entry is not None and entry.get("status") == status


def is_status_condition_true(conditions: Any, type: str) -> bool:
    """True when the condition ``type`` exists with status ``"True"``."""
    return is_status_condition_present_and_equal(conditions, type, "True")


def is_status_condition_false(conditions: Any, type: str) -> bool:
    """True when the condition ``type`` exists with status ``"False"`` (absent or Unknown is neither)."""
    return is_status_condition_present_and_equal(conditions, type, "False")
