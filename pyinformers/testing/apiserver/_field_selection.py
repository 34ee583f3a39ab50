"""Field selectors on the server side: which fields each resource offers, and their values.

:func:`check_field_selector` refuses (400, in the real server's words) a
selector naming a field the resource cannot be selected by.
:func:`selectable` gives the object a selector is matched against: the
object itself, except where the real server's field value is not the JSON
value -- a boolean left out of the JSON (``spec.hostNetwork`` of a Pod,
``spec.unschedulable`` of a Node) is ``false`` to a selector.

Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Any

from pyinformers.api._fields import OBJECT_FIELDS, SELECTABLE_FIELDS
from pyinformers.testing.apiserver._status import bad_request

__all__ = ["check_field_selector", "selectable"]

# The table is the client's (an informer is refused the selectors this server would refuse).
_OBJECT_FIELDS = OBJECT_FIELDS
_SELECTABLE_FIELDS = SELECTABLE_FIELDS
#: how each resource words an unsupported field (the others list what they support)
_FIELD_ERRORS = {
    **dict.fromkeys(
        (
            "/secrets",
            "/pods",
            "/services",
            "/namespaces",
            "/nodes",
            "/events",
            "events.k8s.io/events",
        ),
        "field label not supported: {field}",
    ),
    "batch/jobs": 'field label "{field}" not supported for Job',
}


def check_field_selector(storage_key: str, field_selector: Any) -> None:
    """400 for a field selector naming a field the resource cannot be selected by, as the real server says it."""
    if field_selector is None:
        return
    allowed = _SELECTABLE_FIELDS.get(storage_key, _OBJECT_FIELDS)
    for requirement in field_selector.requirements:
        if requirement.field in allowed:
            continue
        wording = _FIELD_ERRORS.get(storage_key)
        if wording is not None:
            raise bad_request(wording.format(field=requirement.field))
        supported = ", ".join(f'"{f}"' for f in allowed)
        raise bad_request(f'"{requirement.field}" is not a known field selector: only {supported}')


#: boolean fields a selector reads as "true"/"false" even when the JSON leaves them out, per resource
_BOOLEAN_FIELDS = {"/pods": ("spec", "hostNetwork"), "/nodes": ("spec", "unschedulable")}


def selectable(storage_key: str, obj: dict, field_selector: Any) -> dict:
    """``obj`` as ``field_selector`` sees it on the real server (a copy only where they differ)."""
    boolean = _BOOLEAN_FIELDS.get(storage_key)
    if boolean is None or field_selector is None:
        return obj
    section, name = boolean
    if not any(r.field == f"{section}.{name}" for r in field_selector.requirements):
        return obj
    part = obj.get(section) or {}
    return {**obj, section: {**part, name: "true" if part.get(name) is True else "false"}}
