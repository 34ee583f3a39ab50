"""The embedded server's side of field management: names, request checks, and what each write records.

:class:`FieldManagement` is what the REST layer calls on every write:

* :meth:`FieldManagement.record` sets ``metadata.managedFields`` on an object
  a create, update or (non-apply) patch is about to store, as an ``Update`` by
  the request's manager;
* :meth:`FieldManagement.apply` merges an apply configuration into the live
  object (or an empty one) as an ``Apply``, raising the real server's 409 with
  ``FieldManagerConflict`` causes.

It compiles each custom resource version's schema once (keyed by the CRD's
resourceVersion) and knows the built-in kinds' list semantics
(:mod:`._schema`), their empty objects (what an ``Update`` that creates is
compared with) and the fields each endpoint resets (``status`` through the
main resource, ``spec`` through ``/status``).

The helpers :func:`manager_name`, :func:`check_field_manager` and
:func:`decode_apply_body` give the HTTP layer the real server's answers for
the request itself. Thread-safe: the schema cache is guarded by a lock, the
rest is pure.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import yaml

from pyinformers.testing.apiserver._fieldmanager import (
    ApplyConflicts,
    Entry,
    FieldManagerError,
    apply,
    decode_managed_fields,
    encode_managed_fields,
    update,
)
from pyinformers.testing.apiserver._fieldpath import Path
from pyinformers.testing.apiserver._schema import (
    Shape,
    UnknownListType,
    shape_for_builtin,
    shape_for_crd,
)

__all__ = [
    "FieldManagement",
    "manager_name",
    "check_field_manager",
    "decode_apply_body",
    "ApplyConflicts",
]

MAX_MANAGER_LENGTH = 128

_TEMPLATE = {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}
#: What each built-in kind's Go zero value holds besides scalars: the structs that are not
#: pointers (present, so an Update creating the object does not own them as such) and the
#: lists that are null.
_ZERO: dict[str, dict] = {
    "Deployment": {"spec": {"selector": None, "template": _TEMPLATE, "strategy": {}}, "status": {}},
    "ReplicaSet": {"spec": {"selector": None, "template": _TEMPLATE}, "status": {}},
    "StatefulSet": {
        "spec": {"selector": None, "template": _TEMPLATE, "updateStrategy": {}},
        "status": {},
    },
    "DaemonSet": {
        "spec": {"selector": None, "template": _TEMPLATE, "updateStrategy": {}},
        "status": {},
    },
    "Job": {"spec": {"template": _TEMPLATE}, "status": {}},
    "CronJob": {
        "spec": {
            "jobTemplate": {
                "metadata": {"creationTimestamp": None},
                "spec": {"template": _TEMPLATE},
            }
        },
        "status": {},
    },
    "Pod": {"spec": {"containers": None}, "status": {}},
    "PodTemplate": {"template": _TEMPLATE},
    "Service": {"spec": {}, "status": {"loadBalancer": {}}},
    "Event": {"involvedObject": {}, "source": {}},
    "ConfigMap": {},
    "Secret": {},
    "ServiceAccount": {},
}
_ZERO_DEFAULT: dict = {"spec": {}, "status": {}}


def manager_name(field_manager: str | None, user_agent: str) -> str:
    """The manager a write is recorded under: ``fieldManager``, else the user agent's first
    word (up to its first ``/``, printable characters, at most 128)."""
    if field_manager:
        return field_manager
    word = (user_agent or "").split("/")[0]
    printable = "".join(
        ch
        for ch in word
        if unicodedata.category(ch)[0] not in ("C",) and (ch.isprintable() or ch == " ")
    )
    return printable[:MAX_MANAGER_LENGTH]


def check_field_manager(
    field_manager: str | None, options_kind: str, *, apply_patch: bool
) -> tuple[str, str, str] | None:
    """The 422 cause a ``fieldManager`` parameter gets, or None: (reason, field, message)."""
    if field_manager is None or field_manager == "":
        if apply_patch:
            return (
                "FieldValueRequired",
                "fieldManager",
                "Required value: is required for apply patch",
            )
        return None
    if len(field_manager.encode()) > MAX_MANAGER_LENGTH:
        return (
            "FieldValueTooLong",
            "fieldManager",
            f"Too long: may not be more than {MAX_MANAGER_LENGTH} bytes",
        )
    for ch in field_manager:
        if not ch.isprintable():
            return (
                "FieldValueInvalid",
                "fieldManager",
                f"Invalid value: {field_manager!r}: must only contain printable characters",
            )
    return None


def decode_apply_body(body: bytes) -> Any:
    """An apply body (YAML, JSON being YAML) as a value; ValueError worded as Go's YAML decoder words it."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(body)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = str(exc.problem or "")
        if problem.startswith("expected ") and ", but " in problem:
            problem = "did not find " + problem.split(", but ")[0]
        line = mark.line + 1 if mark is not None else 1
        raise ValueError(f"yaml: line {line}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"yaml: {exc}") from None


def _status_prefix(path: Path) -> bool:
    return path[:1] == ("f:status",)


def _outside_status(path: Path) -> bool:
    return path[:1] != ("f:status",)


class FieldManagement:
    """Field ownership for one embedded server (see the module docstring). Thread-safe."""

    def __init__(self, crd_for: Callable[[Any], dict | None], time_func: Callable[[], str]) -> None:
        self._crd_for = crd_for
        self._now = time_func
        self._lock = threading.Lock()
        self._shapes: dict[tuple[str, str, str], Shape] = {}
        #: False: creates, updates and patches record nothing (a benchmark's baseline); apply still works
        self.enabled = True

    def __repr__(self) -> str:
        return f"<FieldManagement shapes={len(self._shapes)}>"

    def shape(self, rt: Any) -> Shape:
        """The merge shape of ``rt``'s objects (a custom resource's from its CRD's schema)."""
        if not rt.is_custom:
            return shape_for_builtin(rt.kind)
        crd = self._crd_for(rt) or {}
        key = (
            rt.crd_name or "",
            rt.version,
            str((crd.get("metadata") or {}).get("resourceVersion")),
        )
        with self._lock:
            cached = self._shapes.get(key)
        if cached is not None:
            return cached
        schema = None
        for version in (crd.get("spec") or {}).get("versions") or ():
            if isinstance(version, dict) and version.get("name") == rt.version:
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
        try:
            shape = shape_for_crd(schema)
        except UnknownListType:
            shape = shape_for_crd(None)
        with self._lock:
            self._shapes = {
                k: v for k, v in self._shapes.items() if k[0] != key[0] or k[1] != key[1]
            }
            self._shapes[key] = shape
        return shape

    @staticmethod
    def ignored(rt: Any, subresource: str | None) -> Callable[[Path], bool]:
        """Which paths an endpoint resets, so nobody owns them through it."""
        if subresource == "status":
            return (
                _outside_status  # /status writes only status: nobody owns anything else through it
            )
        if rt.has_status:
            return _status_prefix
        return lambda path: False

    @staticmethod
    def entries_of(obj: dict | None) -> list[Entry]:
        """The entries an object records (none when they cannot be read: a server resets those)."""
        if obj is None:
            return []
        try:
            return decode_managed_fields((obj.get("metadata") or {}).get("managedFields"))
        except FieldManagerError:
            return []

    def record(
        self,
        rt: Any,
        old: dict | None,
        new: dict,
        manager: str,
        *,
        subresource: str | None = None,
    ) -> None:
        """Set ``new``'s managedFields after ``manager`` wrote it over ``old`` (None: a create)."""
        if not self.enabled:
            return
        entries = self.entries_of(old)
        sent = (new.get("metadata") or {}).get("managedFields")
        if sent and not subresource:
            try:
                entries = decode_managed_fields(sent)  # a client may rewrite the entries on purpose
            except FieldManagerError:
                pass
        zero = None if rt.is_custom else _ZERO.get(rt.kind, _ZERO_DEFAULT)
        try:
            result = update(
                old,
                new,
                entries,
                manager=manager,
                api_version=rt.api_version,
                shape=self.shape(rt),
                now=self._now(),
                subresource=subresource or "",
                zero=zero,
                ignored=self.ignored(rt, subresource),
            )
        except FieldManagerError:
            result = entries  # the real server keeps the write and its previous entries
        self._set(new, result)

    def apply(
        self,
        rt: Any,
        live: dict | None,
        config: dict,
        manager: str,
        *,
        force: bool,
        subresource: str | None = None,
    ) -> dict:
        """The object after applying ``config`` as ``manager`` (managedFields set); raises
        :class:`ApplyConflicts`, or FieldManagerError for a configuration it cannot merge."""
        merged, entries = apply(
            live,
            config,
            self.entries_of(live),
            manager=manager,
            force=force,
            api_version=rt.api_version,
            shape=self.shape(rt),
            now=self._now(),
            subresource=subresource or "",
            ignored=self.ignored(rt, subresource),
        )
        merged = dict(merged)
        self._set(merged, entries)
        return merged

    @staticmethod
    def _set(obj: dict, entries: list[Entry]) -> None:
        # kube-apiserver converts /scale's entries between the Scale and its parent, which drops their times
        entries = [
            replace(e, time=None) if e.subresource == "scale" and e.time else e for e in entries
        ]
        meta = dict(obj.get("metadata") or {})
        if entries:
            meta["managedFields"] = encode_managed_fields(entries)
        else:
            meta.pop("managedFields", None)
        obj["metadata"] = meta
