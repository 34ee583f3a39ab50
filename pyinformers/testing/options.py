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
    if value is None or value == "":
        return None
    try:
        rv = int(value)
    except ValueError:
        raise bad_request(f"{name}: invalid value {value!r}: must be an integer resourceVersion") from None
    if rv < 0:
        raise bad_request(f"{name}: invalid value {value!r}: must be non-negative")
    return rv


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
    if match and not rv:
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided")])
    if match == "Exact" and rv == "0":
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")])
    cont = query.get("continue") or None
    if cont and rv not in (None, "", "0"):
        raise bad_request("specifying resource version is not allowed when using continue")
    return ListOptions(label, field, limit, cont, rv or None, match)


def parse_watch_options(query: dict[str, str]) -> WatchOptions:
    label, field = parse_selectors(query)
    timeout = None
    if query.get("timeoutSeconds"):
        try:
            timeout = float(query["timeoutSeconds"])
        except ValueError:
            raise bad_request(f"timeoutSeconds: {query['timeoutSeconds']!r} is not a number") from None
    send_initial = _bool(query.get("sendInitialEvents"), "sendInitialEvents")
    bookmarks = bool(_bool(query.get("allowWatchBookmarks"), "allowWatchBookmarks"))
    match = query.get("resourceVersionMatch") or None
    if send_initial is not None:
        problems = []
        if match != "NotOlderThan":
            problems.append(("FieldValueInvalid", "resourceVersionMatch", "sendInitialEvents requires resourceVersionMatch=NotOlderThan"))
        if send_initial and not bookmarks:
            problems.append(("FieldValueForbidden", "allowWatchBookmarks", "sendInitialEvents=true requires allowWatchBookmarks=true"))
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

