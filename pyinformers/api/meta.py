"""Helpers on plain-dict Kubernetes objects: keys, owner references, copies.

The cache holds objects as the API server sent them, decoded into ``dict``
(the shape client-go calls *unstructured*). This module owns the small
vocabulary every layer above needs on that shape:

* **keys** -- :func:`object_key` gives ``"namespace/name"`` for a namespaced
  object and ``"name"`` for a cluster-scoped one; :func:`split_key` is its
  inverse. Both reject malformed input with a :class:`ValueError` that says
  what is wrong, because a bad key silently stored is a cache entry no lister
  can ever find again.
* **owner references** -- :func:`controller_of`, :func:`is_controlled_by` and
  :func:`set_controller_reference`, with the API server's rules (no
  cross-namespace owner, no namespaced owner for a cluster-scoped object, at
  most one controller).
* **copies** -- :func:`deep_copy`, specialised for JSON-shaped data.
* small **getters** (:func:`name`, :func:`namespace`, :func:`uid`, ...) that
  tolerate missing ``metadata``.
* :func:`describe`, the one way the library names an object in a log line or
  an error message: kind, namespace, name, uid and resourceVersion, never the
  object's data (a Secret's ``data`` must never reach a log).
* **status conditions** (``metav1.Condition``, apimachinery's semantics):
  :func:`set_status_condition`, :func:`find_status_condition`,
  :func:`remove_status_condition`, :func:`is_status_condition_true`,
  :func:`is_status_condition_false`, :func:`is_status_condition_present_and_equal`.
* **finalizers**: :func:`add_finalizer`, :func:`remove_finalizer`,
  :func:`contains_finalizer` (idempotent; names must be domain-qualified).
* **times**: :func:`format_time`, :func:`format_micro_time`,
  :func:`parse_time`, :func:`parse_time_seconds` (RFC 3339, as the API
  server writes ``Time`` and ``MicroTime``).
* :func:`object_reference` (client-go's ``ref.GetReference``), and
  :func:`ignore_not_found` / :func:`ignore_already_exists` (controller-runtime's
  ``client.IgnoreNotFound`` as a ``with`` block).

Every function here is pure (except :func:`set_controller_reference`, the
condition setters and the finalizer setters, which mutate the object they
are given, by design) and thread-safe.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Mapping, MutableMapping
from types import MappingProxyType
from typing import Any

from pyinformers.api._conditions import (
    CONDITION_STATUSES,
    find_status_condition,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
    validate_condition,
)
from pyinformers.api._finalizers import (
    add_finalizer,
    contains_finalizer,
    remove_finalizer,
    validate_finalizer_name,
)
from pyinformers.api._ignore import Ignored, ignore_already_exists, ignore_not_found
from pyinformers.api._references import object_reference
from pyinformers.api._times import (
    TimeLike,
    format_micro_time,
    format_time,
    parse_time,
    parse_time_seconds,
)

__all__ = [
    "CONDITION_STATUSES",
    "SHARD_LABEL",
    "Ignored",
    "TimeLike",
    "add_finalizer",
    "contains_finalizer",
    "find_status_condition",
    "format_micro_time",
    "format_time",
    "ignore_already_exists",
    "ignore_not_found",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "object_reference",
    "parse_time",
    "parse_time_seconds",
    "remove_finalizer",
    "remove_status_condition",
    "set_status_condition",
    "validate_condition",
    "validate_finalizer_name",
    "AlreadyOwnedError",
    "object_key",
    "split_key",
    "controller_of",
    "is_controlled_by",
    "set_controller_reference",
    "deep_copy",
    "describe",
    "name",
    "namespace",
    "uid",
    "resource_version",
    "labels",
    "annotations",
    "owner_references",
]

#: The label that says which shard of a sharded operator an object is cached in (a decimal number;
#: see docs/ha.rst). :func:`set_controller_reference` gives a child its owner's.
SHARD_LABEL = "sharding.pyinformers.io/shard"

# Read-only, so a caller mutating the "labels" of an unlabelled object cannot poison later calls.
_EMPTY: Mapping[str, Any] = MappingProxyType({})


# --------------------------------------------------------------------------- getters


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if md is not None else _EMPTY


def name(obj: Mapping[str, Any]) -> str | None:
    """``metadata.name``, or None when absent."""
    return _metadata(obj).get("name")


def namespace(obj: Mapping[str, Any]) -> str | None:
    """``metadata.namespace``, or None when absent or empty (cluster-scoped)."""
    return _metadata(obj).get("namespace") or None


def uid(obj: Mapping[str, Any]) -> str | None:
    """``metadata.uid``, or None when absent."""
    return _metadata(obj).get("uid")


def resource_version(obj: Mapping[str, Any]) -> str | None:
    """``metadata.resourceVersion``, or None when absent."""
    return _metadata(obj).get("resourceVersion")


def labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels``; an empty mapping when absent. Do not mutate the result."""
    return _metadata(obj).get("labels") or _EMPTY


def annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:  # type: ignore[no-redef]  # shadows the __future__ flag, harmlessly
    """``metadata.annotations``; an empty mapping when absent. Do not mutate the result."""
    return _metadata(obj).get("annotations") or _EMPTY


def owner_references(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``metadata.ownerReferences``; an empty list when absent. Do not mutate the result."""
    return _metadata(obj).get("ownerReferences") or []


def _text(value: Any, limit: int = 253) -> str | None:
    """``value`` if it is a non-empty string (cut at ``limit``), else None."""
    if type(value) is str and value:
        return value if len(value) <= limit else value[:limit] + "..."
    return None


def describe(obj: Any) -> str:
    """Name ``obj`` for a log line or an error: ``Secret ns/name uid=... rv=...``.

    Only ``kind``, ``metadata.namespace``, ``metadata.name``, ``metadata.uid``
    and ``metadata.resourceVersion`` are read, and only when they are strings:
    nothing else of the object (its ``data``, ``spec``, annotations) ever
    appears. A tombstone (anything with ``key`` and ``obj``) is named by its
    last known object, else by its key. Never raises, whatever ``obj`` is
    (a value that is not an object is named by its type only).
    """
    try:
        if not isinstance(obj, Mapping):
            inner = getattr(obj, "obj", None)
            key = getattr(obj, "key", None)
            if isinstance(inner, Mapping):
                return "tombstone of " + describe(inner)
            if type(key) is str:
                return f"tombstone {_text(key) or '?'}"
            return f"a {type(obj).__name__} (not an object)"
        kind = _text(obj.get("kind"), 63) or "object"
        md = obj.get("metadata")
        if not isinstance(md, Mapping):
            return f"{kind} without metadata"
        n = _text(md.get("name")) or "?"
        ns = _text(md.get("namespace"))
        parts = [kind, f"{ns}/{n}" if ns else n]
        u = _text(md.get("uid"), 64)
        if u:
            parts.append(f"uid={u}")
        rv = _text(md.get("resourceVersion"), 64)
        if rv:
            parts.append(f"rv={rv}")
        return " ".join(parts)
    except Exception:  # a hostile mapping: still say something, and never its content
        return f"a {type(obj).__name__}"


# --------------------------------------------------------------------------- keys


def _check_key_part(value: Any, what: str, source: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{source}: {what} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{source}: {what} is empty")
    if "/" in value:
        raise ValueError(f"{source}: {what} {value!r} contains '/'")
    return value


def object_key(obj: Mapping[str, Any]) -> str:
    """The cache key of ``obj``: ``"namespace/name"``, or ``"name"`` when cluster-scoped.

    Raises ValueError when ``obj`` is not a mapping, has no ``metadata``, has
    no (or an empty) ``metadata.name``, or a name or namespace containing
    ``'/'`` (the API server never produces one; such a key could not be split).
    """
    # Fast path: a well-formed dict object (the cache's every object goes through here).
    if type(obj) is dict:
        md = obj.get("metadata")
        if type(md) is dict:
            n = md.get("name")
            if type(n) is str and n and "/" not in n:
                ns = md.get("namespace")
                if not ns:
                    return n
                if type(ns) is str and "/" not in ns:
                    return f"{ns}/{n}"
    return _object_key_checked(obj)


def _object_key_checked(obj: Mapping[str, Any]) -> str:
    """object_key for anything off the fast path: mappings of other types, or errors."""
    try:
        md = obj["metadata"]
    except (KeyError, TypeError):
        if not isinstance(obj, Mapping):
            raise ValueError(
                f"cannot compute a key for a {type(obj).__name__}: not an object mapping"
            ) from None
        raise ValueError("cannot compute a key: object has no metadata") from None
    if not isinstance(md, Mapping):
        raise ValueError(f"cannot compute a key: metadata is a {type(md).__name__}, not a mapping")
    n = md.get("name")
    if n is None:
        raise ValueError("cannot compute a key: metadata.name is missing")
    _check_key_part(n, "metadata.name", "cannot compute a key")
    ns = md.get("namespace")
    if not ns:
        return n
    _check_key_part(ns, "metadata.namespace", "cannot compute a key")
    return f"{ns}/{n}"


def split_key(key: str) -> tuple[str | None, str]:
    """Split a key made by :func:`object_key` into ``(namespace, name)``.

    The namespace is None for a cluster-scoped key. Raises ValueError for a
    non-string, an empty key, an empty namespace or name part (``"/x"``,
    ``"x/"``) and a key with more than one ``'/'``.
    """
    if not isinstance(key, str):
        raise ValueError(f"invalid key: must be a string, got {type(key).__name__}")
    if not key:
        raise ValueError("invalid key: empty")
    ns, sep, n = key.partition("/")
    if not sep:
        return None, key
    if not ns:
        raise ValueError(f"invalid key {key!r}: empty namespace before '/'")
    if not n:
        raise ValueError(f"invalid key {key!r}: empty name after '/'")
    if "/" in n:
        raise ValueError(f"invalid key {key!r}: more than one '/'")
    return ns, n


# --------------------------------------------------------------------------- owner references


class AlreadyOwnedError(ValueError):
    """Raised by :func:`set_controller_reference` when another controller owns the object.

    ``owner`` is the existing controller reference (a dict), ``key`` the key
    (or name) of the object that is already owned.
    """

    def __init__(self, key: str, owner: Mapping[str, Any]) -> None:
        self.key = key
        self.owner = dict(owner)
        super().__init__(
            f"{key} is already controlled by {owner.get('kind', '?')} {owner.get('name', '?')!r} "
            f"(apiVersion {owner.get('apiVersion', '?')}, uid {owner.get('uid', '?')})"
        )


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference of ``obj`` with ``controller: true``, or None."""
    for ref in owner_references(obj):
        if ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True when ``obj``'s controller reference points at ``owner`` (compared by UID)."""
    ref = controller_of(obj)
    if ref is None:
        return False
    owner_uid = uid(owner)
    return owner_uid is not None and ref.get("uid") == owner_uid


def _describe(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind") or "object"
    ns, n = namespace(obj), name(obj)
    return f"{kind} {ns}/{n}" if ns else f"{kind} {n}"


def _group(api_version: Any) -> str | None:
    if not isinstance(api_version, str):
        return None
    group, _, _version = api_version.rpartition("/")
    return group


def _same_owner(ref: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether owner reference ``ref`` names ``owner``: same API group, kind and name (any version, any uid)."""
    return (
        ref.get("kind") == owner.get("kind")
        and ref.get("name") == name(owner)
        and _group(ref.get("apiVersion")) == _group(owner.get("apiVersion"))
    )


def set_controller_reference(owner: Mapping[str, Any], obj: MutableMapping[str, Any]) -> None:
    """Make ``owner`` the controller of ``obj`` (mutates ``obj``; deep-copy cached objects first).

    Adds an owner reference with ``apiVersion``, ``kind``, ``name``, ``uid``,
    ``controller: true`` and ``blockOwnerDeletion: true``. A reference that
    already points at the same owner -- same API group, kind and name, whatever
    its version and uid -- is replaced in place rather than duplicated, as
    controller-runtime does: an owner deleted and recreated under the same
    name (a new uid) takes over its children instead of leaving a stale
    second reference. Other references are kept. An owner carrying the shard
    label (:data:`SHARD_LABEL`) gives it to ``obj``: with shard-aware caches a
    child is cached in its owner's shard from its creation on.

    Refuses, like the API server does, with ValueError:

    * an owner missing apiVersion, kind, metadata.name or metadata.uid;
    * a namespaced owner for a cluster-scoped object;
    * an owner in another namespace than the object.

    Raises :class:`AlreadyOwnedError` (a ValueError) naming the other owner
    when a different controller (another group, kind or name) already owns ``obj``.
    """
    missing = [
        f
        for f, v in (
            ("apiVersion", owner.get("apiVersion")),
            ("kind", owner.get("kind")),
            ("metadata.name", name(owner)),
            ("metadata.uid", uid(owner)),
        )
        if not v
    ]
    if missing:
        raise ValueError(
            f"owner {_describe(owner)} lacks {', '.join(missing)}; cannot reference it"
        )
    owner_ns, obj_ns = namespace(owner), namespace(obj)
    if owner_ns is not None:
        if obj_ns is None:
            raise ValueError(
                f"cluster-scoped {_describe(obj)} cannot have a namespaced owner ({_describe(owner)})"
            )
        if owner_ns != obj_ns:
            raise ValueError(
                f"cross-namespace owner references are not allowed: owner {_describe(owner)} "
                f"is in namespace {owner_ns!r}, {_describe(obj)} in {obj_ns!r}"
            )
    owner_uid = uid(owner)
    existing = controller_of(obj)
    if existing is not None and not _same_owner(existing, owner):
        raise AlreadyOwnedError(_describe(obj), existing)
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": name(owner),
        "uid": owner_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    refs = list(owner_references(obj))
    for i, r in enumerate(refs):
        if _same_owner(r, owner):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    md = obj.get("metadata")
    if md is None:
        md = obj["metadata"] = {}
    md["ownerReferences"] = refs
    shard = labels(owner).get(SHARD_LABEL)
    if shard is not None:  # a child is cached in its owner's shard from its creation on
        md["labels"] = {**(md.get("labels") or {}), SHARD_LABEL: shard}


# --------------------------------------------------------------------------- copies

_ATOMIC = frozenset({str, int, float, bool, type(None)})


def _copy_list(src: list) -> list:
    # Copy all slots at C speed, then replace the containers (scalars are immutable: shared).
    out = src.copy()
    i = 0
    for v in src:
        t = type(v)
        if t is dict:
            out[i] = _copy_dict(v)
        elif t is list:
            out[i] = _copy_list(v)
        elif t not in _ATOMIC:
            out[i] = _copy.deepcopy(v)
        i += 1
    return out


def _copy_dict(src: dict) -> dict:
    out = src.copy()
    for k, v in src.items():
        t = type(v)
        if t is str:
            continue
        if t is dict:
            out[k] = _copy_dict(v)
        elif t is list:
            out[k] = _copy_list(v)
        elif t not in _ATOMIC:
            out[k] = _copy.deepcopy(v)
    return out


def deep_copy(obj: Any) -> Any:
    """A deep copy of ``obj``, specialised for JSON-shaped data (dicts, lists, scalars).

    Several times faster than :func:`copy.deepcopy` on decoded API objects
    (see ``benchmarks/bench_cache.py``): each dict and list is copied at C
    speed and only its nested containers are revisited; immutable scalars are
    shared, and there is no memo. Anything else met on the way (a tuple, a
    datetime, a dict subclass) is copied with :func:`copy.deepcopy`, so the
    result is always a faithful deep copy -- unlike an ``orjson`` round trip,
    which is about as fast but turns tuples into lists, UUIDs, enums and
    datetimes into strings, NaN into null, and duplicates every string.
    Shared sub-objects are copied once per occurrence (JSON data is a tree);
    a self-referencing structure is not supported on the fast path.
    """
    t = type(obj)
    if t is dict:
        return _copy_dict(obj)
    if t is list:
        return _copy_list(obj)
    if t in _ATOMIC:
        return obj
    return _copy.deepcopy(obj)
