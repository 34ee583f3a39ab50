"""The ``Accept`` negotiation of ``meta.k8s.io``: objects as PartialObjectMetadata, lists, Tables.

kube-apiserver answers a read in one of four forms, chosen by the first entry
of the request's ``Accept`` header it can serve (:func:`negotiate`):

* the object itself (``application/json``, ``*/*``, no header);
* ``application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1``: one
  object, or each object of a watch, as ``{"kind": "PartialObjectMetadata",
  "apiVersion": "meta.k8s.io/v1", "metadata": ...}`` (:func:`partial_object`);
* ``...;as=PartialObjectMetadataList``: a list as a ``PartialObjectMetadataList``
  (:func:`partial_list`);
* ``...;as=Table``: server-side printing, what ``kubectl get`` asks for
  (:func:`table`), with the printer columns of a CRD's version (``Name``
  first, then ``additionalPrinterColumns``, or ``Age`` when it has none) or,
  for other kinds, the default columns ``Name`` and ``Created At``. Rows carry
  the object as PartialObjectMetadata (``includeObject=Metadata``, the
  default), the whole object (``Object``) or nothing (``None``).

Asking for the list form of one object, or the object form of a list, is
answered 406 as the real server does. An ``Accept`` naming only forms this
server cannot produce (protobuf, say) falls to the next entry; with none
left, 406.

Pure functions over JSON dicts; the dispatcher applies them after the verb
ran (so a form never changes what the verb does).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "FULL",
    "PARTIAL",
    "PARTIAL_LIST",
    "TABLE",
    "Form",
    "NotAcceptable",
    "content_type",
    "human_duration",
    "jsonpath_values",
    "negotiate",
    "partial_list",
    "partial_object",
    "printer_columns",
    "table",
    "transform_answer",
]

META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
_PLAIN = frozenset({"*/*", "application/*", "application/json", "application/yaml"})
_FORMS = ("PartialObjectMetadata", "PartialObjectMetadataList", "Table")

#: ObjectMeta's field descriptions, as the real server puts them in a Table's first columns.
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow"
    " a client to request the generation of an appropriate name automatically. Name is primarily intended for"
    " creation idempotence and configuration definition. Cannot be updated. More info:"
    " https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATED_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not"
    " guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It"
    " is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More"
    " info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


@dataclass(frozen=True)
class Form:
    """One answer form: ``kind`` is ``""`` for the object itself, else the meta.k8s.io kind; ``version`` its version."""

    kind: str = ""
    version: str = "v1"

    @property
    def transformed(self) -> bool:
        return bool(self.kind)


FULL = Form()
PARTIAL = Form("PartialObjectMetadata")
PARTIAL_LIST = Form("PartialObjectMetadataList")
TABLE = Form("Table")


class NotAcceptable(Exception):
    """The request cannot be answered in any form its ``Accept`` allows (the server answers 406)."""


def _entries(accept: str) -> Iterable[tuple[str, dict[str, str]]]:
    for item in accept.split(","):
        media, *params = item.split(";")
        media = media.strip().lower()
        if not media:
            continue
        values: dict[str, str] = {}
        for param in params:
            name, _, value = param.partition("=")
            values[name.strip().lower()] = value.strip()
        yield media, values


def negotiate(accept: str | None) -> Form:
    """The form the first servable entry of ``accept`` asks for (:data:`FULL` without a header).

    Raises :class:`NotAcceptable` when no entry can be served.
    """
    if not accept or not accept.strip():
        return FULL
    for media, params in _entries(accept):
        if media not in _PLAIN:
            continue  # protobuf, CBOR, text/html ...: the next entry
        kind = params.get("as")
        if kind is None:
            return FULL
        if kind in _FORMS and params.get("g") == META_GROUP and params.get("v") in META_VERSIONS:
            if media == "application/yaml" and kind != "Table":
                continue
            return Form(kind, params["v"])
        # an "as=" of another group or kind: this entry cannot be served
    raise NotAcceptable(
        "only the following media types are accepted: application/json, application/yaml,"
        " application/vnd.kubernetes.protobuf, application/json;stream=watch"
    )


def content_type(form: Form) -> str:
    """The answer's Content-Type: ``application/json`` whatever the form (kube-apiserver names no form in it)."""
    return "application/json"


def _meta_api_version(form: Form) -> str:
    return f"{META_GROUP}/{form.version}"


def partial_object(obj: dict, form: Form = PARTIAL) -> dict:
    """``obj`` as PartialObjectMetadata (its metadata shared, not copied)."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": _meta_api_version(form),
        "metadata": obj.get("metadata") or {},
    }


def _is_list(answer: Any) -> bool:
    return (
        isinstance(answer, dict)
        and isinstance(answer.get("items"), list)
        and str(answer.get("kind", "")).endswith("List")
    )


def partial_list(answer: dict, form: Form = PARTIAL_LIST) -> dict:
    """A list answer as a PartialObjectMetadataList (its list metadata kept)."""
    item_form = Form("PartialObjectMetadata", form.version)
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": _meta_api_version(form),
        "metadata": answer.get("metadata") or {},
        "items": [partial_object(item, item_form) for item in answer["items"]],
    }


# -- Tables ---------------------------------------------------------------------------------------


def printer_columns(crd: dict | None, version: str) -> list[dict]:
    """The Table columns of a custom resource's ``version`` (``crd`` None: a built-in kind's defaults).

    Each column is the real server's column definition plus ``jsonPath``
    (taken off before the answer is sent).
    """
    name = {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": NAME_DESCRIPTION,
        "priority": 0,
    }
    if crd is None:
        created = {
            "name": "Created At",
            "type": "date",
            "format": "",
            "description": CREATED_DESCRIPTION,
            "priority": 0,
            "jsonPath": ".metadata.creationTimestamp",
            "rfc3339": True,
        }
        return [name, created]
    columns: list[dict] = []
    for served in (crd.get("spec") or {}).get("versions") or ():
        if served.get("name") == version:
            columns = list(served.get("additionalPrinterColumns") or ())
    if not columns:
        columns = [
            {
                "name": "Age",
                "type": "date",
                "description": CREATED_DESCRIPTION,
                "jsonPath": ".metadata.creationTimestamp",
            }
        ]
    out = [name]
    for column in columns:
        path = column.get("jsonPath", "")
        out.append(
            {
                "name": column.get("name", ""),
                "type": column.get("type", "string"),
                "format": column.get("format", ""),
                "description": column.get("description")
                or f"Custom resource definition column (in JSONPath format): {path}",
                "priority": int(column.get("priority") or 0),
                "jsonPath": path,
            }
        )
    return out


_STEP = re.compile(
    r"""\.([^.\[]+)|\[(\d+|\*)\]|\[\?\(@\.([\w.-]+)\s*==\s*(?:"([^"]*)"|'([^']*)')\)\]"""
)


def jsonpath_values(obj: Any, path: str) -> list[Any]:
    """The values a simple JSONPath (``.spec.replicas``, ``.status.conditions[?(@.type=="Ready")].status``,
    ``.spec.items[0]``, ``[*]``) selects in ``obj``; missing keys select nothing."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    current = [obj]
    pos = 0
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            return []
        pos = match.end()
        key, index, field, dq, sq = match.groups()
        nxt: list[Any] = []
        for value in current:
            if key is not None:
                if isinstance(value, dict) and key in value:
                    nxt.append(value[key])
            elif index is not None:
                if isinstance(value, list):
                    if index == "*":
                        nxt.extend(value)
                    elif int(index) < len(value):
                        nxt.append(value[int(index)])
            else:
                wanted = dq if dq is not None else sq
                if isinstance(value, list):
                    for element in value:
                        found = jsonpath_values(element, "." + field)
                        if found and str(found[0]) == wanted:
                            nxt.append(element)
        current = nxt
    return current


def human_duration(seconds: float) -> str:
    """An age as ``kubectl`` shows it (``45s``, ``3m20s``, ``5h``, ``2d3h``, ``3y``)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _parse_time(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc
        )
    except ValueError:
        return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _cell(column: dict, obj: dict, now: datetime.datetime) -> Any:
    values = jsonpath_values(obj, column["jsonPath"])
    if not values or values[0] is None:
        return None
    value = values[0]
    kind = column["type"]
    if kind == "string":
        return ", ".join(_text(v) for v in values) if len(values) > 1 else _text(value)
    if kind == "integer":
        return (
            int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        )
    if kind == "number":
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None
        )
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        if not isinstance(value, str):
            return None
        when = _parse_time(value)
        if when is None:
            return "<invalid>"
        if column.get("rfc3339"):
            return value
        return human_duration((now - when).total_seconds())
    return None


def _row_object(obj: dict, include: str, form: Form) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return partial_object(obj, Form("PartialObjectMetadata", form.version))


def table(
    answer: dict,
    columns: list[dict],
    *,
    include_object: str = "Metadata",
    form: Form = TABLE,
    now: datetime.datetime | None = None,
) -> dict:
    """A get or list answer as a Table with ``columns`` (from :func:`printer_columns`)."""
    if include_object not in ("", "None", "Metadata", "Object"):
        raise ValueError(
            f'includeObject must be one of "None", "Metadata" or "Object", got {include_object!r}'
        )
    now = now or datetime.datetime.now(datetime.timezone.utc)
    objects = answer["items"] if _is_list(answer) else [answer]
    if _is_list(answer):
        metadata = {
            k: v
            for k, v in (answer.get("metadata") or {}).items()
            if k in ("resourceVersion", "continue", "remainingItemCount")
        }
    else:
        rv = (answer.get("metadata") or {}).get("resourceVersion")
        metadata = {"resourceVersion": rv} if rv else {}
    rows = []
    for obj in objects:
        cells = [(obj.get("metadata") or {}).get("name", "")]
        cells.extend(_cell(column, obj, now) for column in columns[1:])
        rows.append(
            {"cells": cells, "object": _row_object(obj, include_object or "Metadata", form)}
        )
    definitions = [
        {k: v for k, v in column.items() if k not in ("jsonPath", "rfc3339")} for column in columns
    ]
    return {
        "kind": "Table",
        "apiVersion": _meta_api_version(form),
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }


def go_type_name(group: str, kind: str, *, custom: bool, is_list: bool) -> str:
    """How kube-apiserver's Go code names an answer's type in messages: ``*core.SecretList``,
    ``*apps.Deployment``, ``*unstructured.UnstructuredList`` for a custom resource."""
    if custom:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    package = group.split(".")[0] if group else "core"
    return f"*{package}.{kind}List" if is_list else f"*{package}.{kind}"


def transform_answer(
    answer: Any,
    form: Form,
    *,
    columns: list[dict] | None = None,
    include_object: str = "Metadata",
    now: datetime.datetime | None = None,
    go_type: str | None = None,
) -> Any:
    """A get or list ``answer`` in ``form``; :class:`NotAcceptable` for a form that does not fit it.

    ``go_type`` names the answer's type in the 406 message as kube-apiserver's
    Go code does (``*core.Secret``, ``*unstructured.UnstructuredList``); the
    answer's kind by default.
    """
    if not form.transformed or not isinstance(answer, dict) or answer.get("kind") == "Status":
        return answer
    is_list = _is_list(answer)
    if form.kind == "PartialObjectMetadata":
        if is_list:
            raise NotAcceptable(
                f"you requested PartialObjectMetadata, but the requested object is a list ({go_type or answer.get('kind')})"
            )
        return partial_object(answer, form)
    if form.kind == "PartialObjectMetadataList":
        if not is_list:
            raise NotAcceptable(
                f"you requested PartialObjectMetadataList, but the requested object is not a list ({go_type or answer.get('kind')})"
            )
        return partial_list(answer, form)
    return table(
        answer,
        columns or printer_columns(None, ""),
        include_object=include_object,
        form=form,
        now=now,
    )
