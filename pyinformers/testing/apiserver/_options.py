"""Query parameters of the in-process API server: list and watch options, continue tokens.

:func:`parse_list_options` and :func:`parse_watch_options` turn a request's
query (``labelSelector``, ``fieldSelector``, ``limit``, ``continue``,
``resourceVersion``, ``resourceVersionMatch``, ``allowWatchBookmarks``,
``sendInitialEvents``, ``timeoutSeconds``) into frozen option values, raising
:class:`~pyinformers.testing.apiserver._status.StatusError` (400 or 422) with the real
server's reasons for bad combinations, checked in the real server's order.
Continue tokens live in :mod:`pyinformers.testing.apiserver._continue_tokens` (their
functions are re-exported here).

Pure functions and frozen values; thread-safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from pyinformers.api import _selectors as selectors
from pyinformers.testing.apiserver._continue_tokens import decode_continue, encode_continue
from pyinformers.testing.apiserver._field_selection import check_field_selector
from pyinformers.testing.apiserver._selector_errors import (
    field_selector_error,
    field_terms,
    label_selector_error,
)
from pyinformers.testing.apiserver._status import bad_request, go_quote, invalid

__all__ = [
    "ListOptions",
    "WatchOptions",
    "parse_list_options",
    "parse_watch_options",
    "for_one_object",
    "parse_selectors",
    "rv_param",
    "rv_syntax_error",
    "go_bool",
    "go_int",
    "encode_continue",
    "decode_continue",
    "check_field_selector",
]


@dataclass(frozen=True)
class ListOptions:
    label_selector: Any = None
    field_selector: Any = None
    limit: int = 0
    continue_: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None


@dataclass(frozen=True)
class WatchOptions:
    label_selector: Any = None
    field_selector: Any = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: float | None = None
    #: the deprecated ``/watch/`` path without ``?watch=true``: checked as a list, and a watch
    #: without resourceVersion gets its initial ADDED events but no end marker
    legacy_path: bool = False


_INT64 = (-(2**63), 2**63 - 1)
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"\+?[0-9]+\.[0-9]+\Z")


def go_bool(value: str | None) -> bool | None:
    """A boolean query parameter as kube-apiserver reads it: None when absent; else false only for ``0`` and ``false`` (any case).

    So ``allowWatchBookmarks=yes``, ``watch=`` and ``sendInitialEvents=no`` all mean true.
    """
    if value is None:
        return None
    return not (value == "0" or value.lower() == "false")


def go_int(value: str) -> int:
    """An integer query parameter as Go's ``strconv.ParseInt(value, 10, 64)`` reads it; 400 in its words otherwise."""
    if not _GO_INT.match(value):
        raise bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: invalid syntax")
    number = int(value)
    if not _INT64[0] <= number <= _INT64[1]:
        raise bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: value out of range")
    return number


def parse_selectors(query: dict[str, str]) -> tuple[Any, Any]:
    """(label selector, field selector), None for each one absent or empty; 400 in the real server's words."""
    for name, why in (
        ("labelSelector", label_selector_error),
        ("fieldSelector", field_selector_error),
    ):
        problem = why(query[name]) if query.get(name) else None
        if problem:
            raise bad_request(problem)
    label = field = None
    try:
        if query.get("labelSelector"):
            label = selectors.LabelSelector.parse(query["labelSelector"])
            if label.empty:
                label = None
    except ValueError as exc:
        raise bad_request(f"unable to parse selector: {exc}") from None
    if query.get("fieldSelector"):
        try:
            field = selectors.FieldSelector.parse(query["fieldSelector"])
        except ValueError:
            # Well formed for the real server, not for the client-side parser (an empty field name):
            # built from the server's terms, the resource check later refuses it as the server does.
            terms, _ = field_terms(query["fieldSelector"])
            ops = {
                "=": selectors.FieldOperator.EQUALS,
                "==": selectors.FieldOperator.EQUALS,
                "!=": selectors.FieldOperator.NOT_EQUALS,
            }
            field = selectors.FieldSelector(
                selectors.FieldRequirement(name, ops[op], value) for name, op, value in terms
            )
        if not str(field):
            field = None
    return label, field


def rv_param(value: str | None, name: str = "resourceVersion") -> int | None:
    """A resourceVersion query value: a plain unsigned integer (400 otherwise, in the real server's words)."""
    if value is None or value == "":
        return None
    if not value.isdigit() or not value.isascii():
        raise bad_request(f"invalid resource version: {rv_syntax_error(value, name)}")
    return int(value)


def rv_syntax_error(value: str, name: str = "resourceVersion") -> str:
    """How the real server words a resourceVersion that is not a plain unsigned integer."""
    return f'{name}: Invalid value: "{value}": strconv.ParseUint: parsing {go_quote(value)}: invalid syntax'


def _timeout_seconds(value: str) -> float:
    """``timeoutSeconds``: an integer as for the real server, or (here only: tests use them) a decimal fraction."""
    if _DECIMAL.match(value):
        return float(value)
    return float(go_int(value))


def _numbers(query: dict[str, str]) -> tuple[float | None, int]:
    """(timeoutSeconds, limit), read first, as the real server converts them before anything else."""
    timeout = _timeout_seconds(query["timeoutSeconds"]) if "timeoutSeconds" in query else None
    limit = go_int(query["limit"]) if "limit" in query else 0
    return timeout, max(limit, 0)  # a negative limit is no limit


def _forbidden(field: str, detail: str) -> tuple[str, str, str]:
    return ("FieldValueForbidden", field, detail)


def _not_supported(value: str, supported: tuple[str, ...]) -> tuple[str, str, str]:
    listed = ", ".join(f'"{v}"' for v in supported)
    return (
        "FieldValueNotSupported",
        "resourceVersionMatch",
        f"Unsupported value: {go_quote(value)}: supported values: {listed}",
    )


def _check(problems: list) -> None:
    if problems:
        raise invalid("ListOptions", "meta.k8s.io", "", problems)


def _list_problems(query: dict[str, str]) -> list:
    match = query.get("resourceVersionMatch") or None
    rv = query.get("resourceVersion") or None
    problems = []
    if match is not None:
        if not rv:
            problems.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if query.get("continue"):
            problems.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in ("Exact", "NotOlderThan"):
            problems.append(_not_supported(match, ("Exact", "NotOlderThan", "")))
        if match == "Exact" and rv == "0":
            problems.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if "sendInitialEvents" in query:
        problems.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return problems


def _watch_problems(query: dict[str, str], send_initial: bool | None) -> list:
    match = query.get("resourceVersionMatch") or None
    problems = []
    # allowWatchBookmarks is not required with sendInitialEvents: without it the stream just has no end marker.
    if send_initial is not None and match != "NotOlderThan":
        problems.append(
            _forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match is not None:
        if send_initial is None:
            problems.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            )
        if match != "NotOlderThan":
            problems.append(_not_supported(match, ("NotOlderThan",)))
    if query.get("continue"):
        problems.append(
            _forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            )
        )
    return problems


def parse_list_options(query: dict[str, str]) -> ListOptions:
    """A list's options, checked in the real server's order: numbers, selectors, then the 422 rules (all causes at once).

    What needs the resource (supported field selectors), the continue token
    and the resourceVersion are checked by the list itself, in that order.
    """
    _, limit = _numbers(query)
    label, field = parse_selectors(query)
    _check(_list_problems(query))
    return ListOptions(
        label,
        field,
        limit,
        query.get("continue") or None,
        query.get("resourceVersion") or None,
        query.get("resourceVersionMatch") or None,
    )


def parse_watch_options(query: dict[str, str], *, legacy_path: bool = False) -> WatchOptions:
    """A watch's options, checked in the real server's order (numbers, selectors, the 422 rules).

    Booleans read as the real server reads them (:func:`go_bool`). The
    resourceVersion is checked by the watch itself, after the field selector.
    ``legacy_path``: the request came by the deprecated ``/watch/`` path; unless
    it also says ``watch=true`` its options are checked as a list's (so
    ``sendInitialEvents`` is refused), as the real server does.
    """
    timeout, _ = _numbers(query)
    label, field = parse_selectors(query)
    send_initial = go_bool(query.get("sendInitialEvents"))
    as_list = legacy_path and not go_bool(query.get("watch"))
    _check(_list_problems(query) if as_list else _watch_problems(query, send_initial))
    return WatchOptions(
        label,
        field,
        query.get("resourceVersion") or None,
        query.get("resourceVersionMatch") or None,
        bool(go_bool(query.get("allowWatchBookmarks"))),
        send_initial,
        timeout,
        as_list,
    )


def for_one_object(options: WatchOptions, name: str) -> WatchOptions:
    """``options`` narrowed to the object ``name`` (a watch by a named path); 400 if its field selector names another."""
    field = options.field_selector
    requirements = list(field.requirements) if field is not None else []
    if any(
        r.field == "metadata.name" and r.operator.value == "=" and r.value != name
        for r in requirements
    ):
        raise bad_request("fieldSelector metadata.name doesn't match requested name")
    requirements.append(
        selectors.FieldRequirement("metadata.name", selectors.FieldOperator.EQUALS, name)
    )
    return replace(options, field_selector=selectors.FieldSelector(requirements))
