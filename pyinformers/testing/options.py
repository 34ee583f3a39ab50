"""Query parameters of the in-process API server: list and watch options, continue tokens.

:func:`parse_list_options` and :func:`parse_watch_options` turn a request's
query (``labelSelector``, ``fieldSelector``, ``limit``, ``continue``,
``resourceVersion``, ``resourceVersionMatch``, ``allowWatchBookmarks``,
``sendInitialEvents``, ``timeoutSeconds``) into frozen option values, raising
:class:`~pyinformers.testing.status.StatusError` (400 or 422) with the real
server's reasons for bad combinations. Continue tokens are opaque to clients:
base64 of the list's resourceVersion and the last key returned.

Pure functions and frozen values; thread-safe.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Optional

import orjson

from pyinformers.api import selectors
from pyinformers.testing.status import bad_request, invalid

__all__ = [
    "ListOptions",
    "WatchOptions",
    "parse_list_options",
    "parse_watch_options",
    "parse_selectors",
    "rv_param",
    "encode_continue",
    "decode_continue",
    "check_field_selector",
]

_CONTINUE_VERSION = "meta.k8s.io/v1"


@dataclass(frozen=True)
class ListOptions:
    label_selector: Any = None
    field_selector: Any = None
    limit: int = 0
    continue_: Optional[str] = None
    resource_version: Optional[str] = None
    resource_version_match: Optional[str] = None


@dataclass(frozen=True)
class WatchOptions:
    label_selector: Any = None
    field_selector: Any = None
    resource_version: Optional[str] = None
    resource_version_match: Optional[str] = None
    allow_bookmarks: bool = False
    send_initial_events: Optional[bool] = None
    timeout_seconds: Optional[float] = None


def _bool(value: Optional[str], name: str) -> Optional[bool]:
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0", ""):
        return False
    raise bad_request(f"{name}: {value!r} is not a boolean")


def parse_selectors(query: dict[str, str]) -> tuple[Any, Any]:
    label = field = None
    try:
        if query.get("labelSelector"):
            label = selectors.LabelSelector.parse(query["labelSelector"])
            if label.empty:
                label = None
        if query.get("fieldSelector"):
            field = selectors.FieldSelector.parse(query["fieldSelector"])
            if not str(field):
                field = None
    except ValueError as exc:
        raise bad_request(f"unable to parse selector: {exc}") from None
    return label, field


def rv_param(value: Optional[str], name: str = "resourceVersion") -> Optional[int]:
    """A resourceVersion query value: a plain unsigned integer (400 otherwise, in the real server's words)."""
    if value is None or value == "":
        return None
    if not value.isdigit() or not value.isascii():
        raise bad_request(
            f'invalid resource version: {name}: Invalid value: "{value}": strconv.ParseUint: parsing "{value}": invalid syntax'
        )
    return int(value)


def _timeout_seconds(value: str) -> float:
    """``timeoutSeconds``: an integer for the real server; fractions are accepted here (tests use them)."""
    try:
        timeout = float(value)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None
    if timeout != timeout or timeout in (float("inf"), float("-inf")):
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    return timeout


def parse_list_options(query: dict[str, str]) -> ListOptions:
    label, field = parse_selectors(query)
    limit = 0
    if query.get("limit"):
        try:
            limit = int(query["limit"])
        except ValueError:
            raise bad_request(f"limit: {query['limit']!r} is not an integer") from None
        if limit < 0:
            raise bad_request("limit must not be negative")
    match = query.get("resourceVersionMatch") or None
    if match not in (None, "Exact", "NotOlderThan"):
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueNotSupported", "resourceVersionMatch", f"Unsupported value: {match!r}: supported values: \"Exact\", \"NotOlderThan\"")])
    rv = query.get("resourceVersion")
    if match and not rv and query.get("sendInitialEvents") is None:
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided")])
    if match == "Exact" and rv == "0":
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")])
    if query.get("sendInitialEvents") is not None:
        problems = []
        if match and not rv:
            problems.append(("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        problems.append(("FieldValueForbidden", "sendInitialEvents", "sendInitialEvents is forbidden for list"))
        raise invalid("ListOptions", "meta.k8s.io", "", problems)
    cont = query.get("continue") or None
    if cont and rv not in (None, "", "0"):
        raise bad_request("specifying resource version is not allowed when using continue")
    return ListOptions(label, field, limit, cont, rv or None, match)


def parse_watch_options(query: dict[str, str]) -> WatchOptions:
    label, field = parse_selectors(query)
    timeout = _timeout_seconds(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
    send_initial = _bool(query.get("sendInitialEvents"), "sendInitialEvents")
    bookmarks = bool(_bool(query.get("allowWatchBookmarks"), "allowWatchBookmarks"))
    match = query.get("resourceVersionMatch") or None
    if send_initial is not None:
        # allowWatchBookmarks is not required: without it the stream just has no end marker.
        problems = []
        if match != "NotOlderThan":
            problems.append(("FieldValueForbidden", "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match is not None and match != "NotOlderThan":
            problems.append(("FieldValueNotSupported", "resourceVersionMatch", f'Unsupported value: "{match}": supported values: "NotOlderThan"'))
        if problems:
            raise invalid("ListOptions", "meta.k8s.io", "", problems)
    elif match is not None:
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")])
    rv = query.get("resourceVersion") or None
    rv_param(rv)
    return WatchOptions(label, field, rv, match, bookmarks, send_initial, timeout)


def encode_continue(rv: int, start: str) -> str:
    token = orjson.dumps({"v": _CONTINUE_VERSION, "rv": rv, "start": start})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        if data.get("v") != _CONTINUE_VERSION or not isinstance(data.get("rv"), int) or not isinstance(data.get("start"), str):
            raise ValueError("unknown token layout")
        return data["rv"], data["start"]
    except (ValueError, binascii.Error, orjson.JSONDecodeError, AttributeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from None



#: the fields each resource supports in field selectors (beyond metadata.name and metadata.namespace)
_SELECTABLE_FIELDS = {
    "/secrets": ("type",),
    "/pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ),
    "/namespaces": ("status.phase",),
    "/nodes": ("spec.unschedulable",),
    "/events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "apps/replicasets": ("status.replicas",),
    "batch/jobs": ("status.successful",),
}
#: resources whose unsupported field selectors get the generic message (the rest list what they support)
_GENERIC_FIELD_ERROR = frozenset({"/secrets", "/pods", "/namespaces", "/nodes", "/events", "apps/replicasets", "batch/jobs"})


def check_field_selector(storage_key: str, field_selector: Any) -> None:
    """400 for a field selector naming a field the resource cannot be selected by, as the real server says it."""
    if field_selector is None:
        return
    allowed = ("metadata.name", "metadata.namespace") + _SELECTABLE_FIELDS.get(storage_key, ())
    for requirement in field_selector.requirements:
        if requirement.field in allowed:
            continue
        if storage_key in _GENERIC_FIELD_ERROR:
            raise bad_request(f"field label not supported: {requirement.field}")
        supported = ", ".join(f'"{f}"' for f in allowed)
        raise bad_request(f'"{requirement.field}" is not a known field selector: only {supported}')
