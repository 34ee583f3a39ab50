"""Structural schemas: how kube-apiserver's apiextensions treats a custom resource, step by step.

A write of a custom resource goes through the steps the real server takes,
in its order (:func:`check_custom_object`):

1. **prune**: a field no schema node specifies is dropped and its path
   recorded (the server turns those into ``Warning`` headers, or a 400 with
   ``fieldValidation=Strict``). The root, and every node marked
   ``x-kubernetes-embedded-resource``, keeps ``apiVersion``, ``kind`` and
   ``metadata`` whatever its ``properties`` say (``metadata: {type: object}``
   as controller-gen writes it does not prune the object's name). Under
   ``x-kubernetes-preserve-unknown-fields`` unknown fields stay, but the
   fields the schema specifies below are still pruned by their own schemas.
   ``additionalProperties`` gives every key the same schema.
2. a ``null`` in a field that is not ``nullable`` and has no ``default`` is
   dropped;
3. **metadata** (at the root and in embedded resources) keeps only the
   fields ObjectMeta has;
4. **defaults** fill absent fields (and non-nullable nulls) at every depth,
   under ``items``, ``additionalProperties`` and preserve-unknown-fields
   nodes too; the same step runs when an object is read back
   (:func:`apply_defaults`), so a default added to a CRD later shows on old
   objects, as on a real server;
5. **validation**: OpenAPI value validation (type, ``nullable``, enum,
   bounds, lengths, pattern, items, properties counts, list types,
   ``x-kubernetes-int-or-string``), the root ``metadata`` only by its
   ``name`` and ``generateName`` constraints, embedded resources'
   ``apiVersion``, ``kind`` and ObjectMeta; then the CEL rules
   (``x-kubernetes-validations``) by :mod:`._cel`.

:func:`structural_causes` checks a CRD's schema is structural, with the
real server's messages (a CRD that is not is refused with a 422).

Pure functions over plain dicts (a checked object is a copy); thread-safe.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import orjson

__all__ = [
    "check_custom_object",
    "apply_defaults",
    "structural_causes",
    "json_type",
    "schema_nodes",
    "schema_mentions",
    "ratchets",
]

Cause = tuple[str, str, str]
ABSENT: Any = object()  # no correlated old value
ROOT_FIELD = "<nil>"  # the field of a cause without one: Go's nil field.Path

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
_META_FIELDS = ("apiVersion", "kind", "metadata")
# The fields of ObjectMeta (k8s.io/apimachinery/pkg/apis/meta/v1): what a metadata object keeps.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def go_json(value: Any) -> str:
    """A value as the real server's messages quote it (compact JSON)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def _schema(value: Any) -> dict | None:
    return value if isinstance(value, dict) else None


def _props(schema: dict | None) -> dict:
    props = schema.get("properties") if schema else None
    return props if isinstance(props, dict) else {}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def json_type(value: Any) -> str:
    """A JSON value's type as OpenAPI names it (``integer``, ``number``, ``object``, ``null`` ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# -- 1. pruning ------------------------------------------------------------------------------------


def _prune(
    value: Any,
    schema: dict | None,
    path: str,
    pruned: list[str],
    *,
    resource_root: bool = False,
    keep_unknown: bool = False,
) -> None:
    """Drop (in place) the fields ``schema`` does not specify; ``pruned`` gets their paths.

    ``keep_unknown`` (a node with x-kubernetes-preserve-unknown-fields, and
    the items of its lists) keeps fields no schema names, while the fields
    a schema does name below are pruned by it.
    """
    keep_unknown = keep_unknown or (schema is not None and schema.get(PRESERVE) is True)
    if isinstance(value, dict):
        if schema is None:
            if not keep_unknown:
                pruned.extend(_join(path, key) for key in value)
                value.clear()
            return
        embedded = resource_root or schema.get(EMBEDDED) is True
        props = _props(schema)
        additional = schema.get("additionalProperties")
        for key in list(value):
            if embedded and key in _META_FIELDS:
                continue
            if key in props:
                _prune(value[key], _schema(props[key]), _join(path, key), pruned)
            elif additional is not None and additional is not False:
                _prune(value[key], _schema(additional), _join(path, key), pruned)
            elif not keep_unknown:
                pruned.append(_join(path, key))
                del value[key]
    elif isinstance(value, list):
        if keep_unknown and schema is None:
            return
        items = _schema(schema.get("items")) if schema is not None else None
        for i, item in enumerate(value):
            _prune(item, items, f"{path}[{i}]", pruned, keep_unknown=keep_unknown)


def _field_schema(schema: dict | None, key: str) -> dict | None:
    """The schema of ``key`` inside an object of ``schema``: its property, else additionalProperties."""
    if schema is None:
        return None
    props = _props(schema)
    if key in props:
        return _schema(props[key])
    return _schema(schema.get("additionalProperties"))


# -- 2. nulls --------------------------------------------------------------------------------------


def _prune_nulls(value: Any, schema: dict | None) -> None:
    """Drop nulls of non-nullable fields that have no default (in place)."""
    if isinstance(value, dict):
        for key in list(value):
            sub = _field_schema(schema, key)
            if (
                value[key] is None
                and sub is not None
                and sub.get("nullable") is not True
                and "default" not in sub
            ):
                del value[key]
            else:
                _prune_nulls(value[key], sub)
    elif isinstance(value, list):
        items = _schema(schema.get("items")) if schema is not None else None
        for item in value:
            _prune_nulls(item, items)


# -- 3. metadata -----------------------------------------------------------------------------------


def _coerce_metadata(
    value: Any, schema: dict | None, path: str, pruned: list[str], *, resource_root: bool = False
) -> None:
    """ObjectMeta keeps only its own fields, at the root and in every embedded resource (in place)."""
    if schema is None:
        return
    if isinstance(value, dict):
        if resource_root or schema.get(EMBEDDED) is True:
            meta = value.get("metadata")
            if isinstance(meta, dict):
                for key in list(meta):
                    if key not in OBJECT_META_FIELDS:
                        pruned.append(_join(_join(path, "metadata"), key))
                        del meta[key]
        props = _props(schema)
        additional = _schema(schema.get("additionalProperties"))
        for key, item in value.items():
            if key in props:
                _coerce_metadata(item, _schema(props[key]), _join(path, key), pruned)
            elif additional is not None:
                _coerce_metadata(item, additional, _join(path, key), pruned)
    elif isinstance(value, list):
        items = _schema(schema.get("items"))
        for i, item in enumerate(value):
            _coerce_metadata(item, items, f"{path}[{i}]", pruned)


# -- 4. defaults -----------------------------------------------------------------------------------


def _default(value: Any, schema: dict | None, *, dry: bool = False) -> bool:
    """Fill in ``default`` values of absent fields and of non-nullable nulls, at every depth (in place).

    Returns whether anything was (``dry``: would be) filled in; ``dry`` changes nothing
    and stops at the first default missing.
    """
    if schema is None:
        return False
    changed = False
    if isinstance(value, dict):
        props = _props(schema)
        for key, sub in props.items():
            if isinstance(sub, dict) and "default" in sub and sub["default"] is not None:
                if key not in value or (value[key] is None and sub.get("nullable") is not True):
                    if dry:
                        return True
                    value[key] = _copy(sub["default"])
                    changed = True
        additional = _schema(schema.get("additionalProperties"))
        for key in value:
            sub = _schema(props[key]) if key in props else additional
            if sub is None:
                continue
            if (
                key not in props
                and value[key] is None
                and sub.get("nullable") is not True
                and sub.get("default") is not None
            ):
                if dry:
                    return True
                value[key] = _copy(sub["default"])
                changed = True
            if _default(value[key], sub, dry=dry):
                if dry:
                    return True
                changed = True
    elif isinstance(value, list):
        items = _schema(schema.get("items"))
        if items is None:
            return False
        for i, item in enumerate(value):
            if (
                item is None
                and items.get("nullable") is not True
                and items.get("default") is not None
            ):
                if dry:
                    return True
                value[i] = _copy(items["default"])
                changed = True
            if _default(value[i], items, dry=dry):
                if dry:
                    return True
                changed = True
    return changed


def apply_defaults(schema: dict | None, obj: dict) -> dict:
    """``obj`` with its schema's defaults filled in (a copy when anything changed); what a read returns.

    Memoised per (object, schema) identity: stored objects and CRD schemas
    are replaced on a write, never changed in place, so a read of an
    unchanged object under an unchanged schema costs a dict lookup.
    """
    if not isinstance(schema, dict) or not _has_defaults(schema):
        return obj
    key = id(obj)
    cached = _read_defaults.get(key)
    if cached is not None and cached[0] is obj and cached[1] is schema:
        return cached[2]
    result = obj
    if _default(obj, schema, dry=True):
        result = _copy(obj)
        _default(result, schema)
    with _mentions_lock:
        if len(_read_defaults) > 20_000:
            _read_defaults.clear()
        _read_defaults[key] = (obj, schema, result)
    return result


_read_defaults: dict[int, tuple[dict, dict, dict]] = {}


def _has_defaults(schema: dict) -> bool:
    return schema_mentions(schema, '"default"')


_mentions: dict[tuple[int, str], tuple[dict, bool]] = {}
_mentions_lock = threading.Lock()


def schema_mentions(schema: dict, token: str) -> bool:
    """Whether ``token`` occurs in ``schema``'s JSON; memoised per schema object (a CRD's schemas are not mutated)."""
    key = (id(schema), token)
    cached = _mentions.get(key)
    if cached is not None and cached[0] is schema:
        return cached[1]
    found = token in orjson.dumps(schema).decode()
    with _mentions_lock:
        if len(_mentions) > 10_000:
            _mentions.clear()
        _mentions[key] = (schema, found)
    return found


def schema_nodes(schema: dict, path: str = "") -> Iterator[tuple[dict, str]]:
    """Every schema node below properties, items and additionalProperties, with its path as CRD causes name it."""
    yield schema, path
    for key, sub in _props(schema).items():
        if isinstance(sub, dict):
            yield from schema_nodes(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            yield from schema_nodes(sub, f"{path}.{key}")


# -- 5. validation ---------------------------------------------------------------------------------

_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)\Z")
_DATE = re.compile(r"\d{4}-\d\d-\d\d\Z")
_UUID = re.compile(
    r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\Z"
)


def _ipv4(value: str) -> bool:
    parts = value.split(".")
    return len(parts) == 4 and all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts)


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
        return True
    except ValueError:
        return False


def _uuid(value: str) -> bool:
    if not _UUID.match(value):
        return False
    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


# The string formats kube-openapi checks; other formats are not checked (as there).
_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": lambda v: bool(_DATE_TIME.match(v)),
    "date": lambda v: bool(_DATE.match(v)),
    "uuid": _uuid,
    "byte": _byte,
    "ipv4": _ipv4,
}


class _Validator:
    """One validation pass: ``causes`` collects ``(reason, field, message)``."""

    def __init__(
        self, message_root: str, metadata_check: Callable[[dict, str], list[Cause]] | None
    ) -> None:
        self.causes: list[Cause] = []
        self.message_root = message_root  # stripped from paths in messages (a /status write)
        self.metadata_check = metadata_check

    def _label(self, path: str) -> str:
        if self.message_root and path.startswith(self.message_root):
            return path[len(self.message_root) :]
        return path

    def _add(self, reason: str, path: str, message: str) -> None:
        self.causes.append((reason, path, message))

    def check(
        self, schema: dict, value: Any, path: str, *, resource_root: bool = False, old: Any = ABSENT
    ) -> None:
        """Validate ``value``; ``old`` is the correlated old value on an update (ABSENT: none).

        Ratcheting (the real server's since 1.30): a value equal to its
        correlated old value is not validated, so an update may leave a value
        alone that a newer schema would refuse.
        """
        if old is not ABSENT and ratchets(schema, value, old):
            return
        if value is None and schema.get("nullable") is True:
            return
        if schema.get(INT_OR_STRING) is True:
            if not (isinstance(value, (int, str)) and not isinstance(value, bool)):
                actual = json_type(value)
                self._add(
                    "FieldValueTypeInvalid",
                    path,
                    f'Invalid value: "{actual}": {self._label(path)} in body must be of type integer,string: "{actual}"',
                )
                self._junctors(
                    schema, value, path
                )  # controller-gen's anyOf [integer, string] speaks too
                return
        else:
            kind = schema.get("type")
            if (
                isinstance(kind, str)
                and kind
                and not (
                    json_type(value) == kind or (kind == "number" and json_type(value) == "integer")
                )
            ):
                actual = json_type(value)
                self._add(
                    "FieldValueTypeInvalid",
                    path,
                    f'Invalid value: "{actual}": {self._label(path)} in body must be of type {kind}: "{actual}"',
                )
                return
        self._junctors(schema, value, path)
        enum = schema.get("enum")
        if isinstance(enum, list) and value not in enum:
            supported = ", ".join(go_json(e) for e in enum)
            self._add(
                "FieldValueNotSupported",
                path,
                f"Unsupported value: {go_json(value)}: supported values: {supported}",
            )
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._number(schema, value, path)
        elif isinstance(value, str):
            self._string(schema, value, path)
        elif isinstance(value, dict):
            self._object(schema, value, path, resource_root=resource_root, old=old)
        elif isinstance(value, list):
            self._array(schema, value, path, old=old)

    def _branch(self, schema: Any, value: Any, path: str) -> list[Cause]:
        """The causes of ``value`` against one branch of anyOf/allOf/oneOf/not (empty: it validates)."""
        if not isinstance(schema, dict):
            return []
        branch = _Validator(self.message_root, None)
        branch.check(schema, value, path)
        return branch.causes

    def _junctors(self, schema: dict, value: Any, path: str) -> None:
        """anyOf, allOf, oneOf and not, as kube-openapi reports them (the composite error has no field)."""
        label = self._label(path)
        any_of = schema.get("anyOf")
        if isinstance(any_of, list) and any_of:
            results = [self._branch(b, value, path) for b in any_of]
            if all(results):
                self._add(
                    "FieldValueInvalid",
                    ROOT_FIELD,
                    f'Invalid value: "": "{label}" must validate at least one schema (anyOf)',
                )
                self.causes.extend(results[0])
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            results = [self._branch(b, value, path) for b in one_of]
            if sum(1 for r in results if not r) != 1:
                self._add(
                    "FieldValueInvalid",
                    ROOT_FIELD,
                    f'Invalid value: "": "{label}" must validate one and only one schema (oneOf)',
                )
                if all(results):
                    self.causes.extend(results[0])
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for branch in all_of:
                self.causes.extend(self._branch(branch, value, path))
        negated = schema.get("not")
        if isinstance(negated, dict) and not self._branch(negated, value, path):
            self._add(
                "FieldValueInvalid",
                ROOT_FIELD,
                f'Invalid value: "": "{label}" must not validate the schema (not)',
            )

    def _number(self, schema: dict, value: float, path: str) -> None:
        label = self._label(path)
        for key, flag, word in (
            ("minimum", "exclusiveMinimum", "greater"),
            ("maximum", "exclusiveMaximum", "less"),
        ):
            bound = schema.get(key)
            if not isinstance(bound, (int, float)) or isinstance(bound, bool):
                continue
            exclusive = schema.get(flag) is True
            beyond = value < bound if word == "greater" else value > bound
            if beyond or (exclusive and value == bound):
                relation = f"{word} than" if exclusive else f"{word} than or equal to"
                self._add(
                    "FieldValueInvalid",
                    path,
                    f"Invalid value: {go_json(value)}: {label} in body should be {relation} {go_json(bound)}",
                )
        factor = schema.get("multipleOf")
        if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0:
            quotient = value / factor
            if quotient != int(quotient):
                self._add(
                    "FieldValueInvalid",
                    path,
                    f"Invalid value: {go_json(value)}: {label} in body should be a multiple of {go_json(factor)}",
                )

    def _string(self, schema: dict, value: str, path: str) -> None:
        label = self._label(path)
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            self._add(
                "FieldValueInvalid",
                path,
                f"Invalid value: {go_json(value)}: {label} in body should be at least {low} chars long",
            )
        if isinstance(high, int) and len(value) > high:
            self._add("FieldValueTooLong", path, f"Too long: may not be more than {high} bytes")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                if re.search(pattern, value) is None:
                    self._add(
                        "FieldValueInvalid",
                        path,
                        f"Invalid value: {go_json(value)}: {label} in body should match '{pattern}'",
                    )
            except re.error:
                pass
        fmt = schema.get("format")
        check = _FORMATS.get(fmt) if isinstance(fmt, str) else None
        if check is not None and not check(value):
            self._add(
                "FieldValueTypeInvalid",
                path,
                f"Invalid value: {go_json(value)}: {label} in body must be of type {fmt}: {go_json(value)}",
            )

    def _object(
        self, schema: dict, value: dict, path: str, *, resource_root: bool, old: Any = ABSENT
    ) -> None:
        label = self._label(path) or "body"
        props = _props(schema)
        required = schema.get("required")
        for key in required if isinstance(required, list) else ():
            if isinstance(key, str) and key not in value:
                self._add("FieldValueRequired", _join(path, key), "Required value")
        for bound, word in (("minProperties", "at least"), ("maxProperties", "at most")):
            limit = schema.get(bound)
            if isinstance(limit, int) and (
                len(value) < limit if bound == "minProperties" else len(value) > limit
            ):
                reason = "FieldValueTooMany" if bound == "maxProperties" else "FieldValueInvalid"
                message = (
                    f"Too many: {len(value)}: must have at most {limit} items"
                    if bound == "maxProperties"
                    else f"Invalid value: {len(value)}: {label} in body should have {word} {limit} properties"
                )
                self._add(reason, path, message)
        embedded = schema.get(EMBEDDED) is True
        if embedded and not resource_root:
            self._embedded(value, path)
        additional = _schema(schema.get("additionalProperties"))
        for key, item in value.items():
            child = _join(path, key)
            if (resource_root or embedded) and key == "metadata":
                self._metadata(_schema(props.get("metadata")), item, child, root=resource_root)
                continue
            sub = _schema(props.get(key)) or additional
            if sub is not None:
                previous = old.get(key, ABSENT) if isinstance(old, dict) else ABSENT
                self.check(sub, item, child, old=previous)

    def _metadata(self, schema: dict | None, value: Any, path: str, *, root: bool) -> None:
        """Root metadata: only name/generateName constraints; embedded: ObjectMeta's validation."""
        if not isinstance(value, dict):
            return
        if schema is not None and not root:
            self.check(schema, value, path)  # an embedded resource's metadata schema applies whole
        elif schema is not None:
            props = _props(schema)
            for key in ("name", "generateName"):
                sub = _schema(props.get(key))
                if sub is not None and isinstance(value.get(key), str):
                    self.check(sub, value[key], _join(path, key))
        if not root and self.metadata_check is not None:
            meta = dict(value)
            meta.setdefault("name", "fakename")
            self.causes.extend(self.metadata_check(meta, path))

    def _embedded(self, value: dict, path: str) -> None:
        """An embedded resource needs a string apiVersion (a group/version) and kind."""
        for key in ("apiVersion", "kind"):
            if key not in value or value[key] == "":
                self._add("FieldValueRequired", _join(path, key), "Required value")
            elif not isinstance(value[key], str):
                self._add(
                    "FieldValueInvalid",
                    _join(path, key),
                    f"Invalid value: {go_json(value[key])}: must be a string",
                )
        api_version = value.get("apiVersion")
        if isinstance(api_version, str) and api_version.count("/") > 1:
            self._add(
                "FieldValueInvalid",
                _join(path, "apiVersion"),
                f'Invalid value: "{api_version}": unexpected GroupVersion string: {api_version}',
            )

    def _array(self, schema: dict, value: list, path: str, *, old: Any = ABSENT) -> None:
        label = self._label(path)
        for key in ("minItems", "maxItems"):
            bound = schema.get(key)
            if isinstance(bound, int) and (
                len(value) < bound if key == "minItems" else len(value) > bound
            ):
                if key == "minItems":
                    self._add(
                        "FieldValueInvalid",
                        path,
                        f"Invalid value: {len(value)}: {label} in body should have at least {bound} items",
                    )
                else:
                    self._add(
                        "FieldValueTooMany",
                        path,
                        f"Too many: {len(value)}: must have at most {bound} items",
                    )
        items = _schema(schema.get("items"))
        if items is not None:
            olds = _map_list_olds(schema, old)
            keys = schema.get("x-kubernetes-list-map-keys")
            for i, item in enumerate(value):
                previous = ABSENT
                if olds and isinstance(item, dict) and isinstance(keys, list):
                    previous = olds.get(go_json([item.get(k) for k in keys]), ABSENT)
                self.check(items, item, f"{path}[{i}]", old=previous)
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[Any] = []
            for i, item in enumerate(value):
                if item in seen:
                    self._add(
                        "FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {go_json(item)}"
                    )
                else:
                    seen.append(item)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys")
            if isinstance(keys, list):
                seen_keys: list[Any] = []
                for i, item in enumerate(value):
                    if not isinstance(item, dict):
                        continue
                    identity = {k: item.get(k) for k in keys if k in item}
                    if identity in seen_keys:
                        self._add(
                            "FieldValueDuplicate",
                            f"{path}[{i}]",
                            f"Duplicate value: {go_json(identity)}",
                        )
                    else:
                        seen_keys.append(identity)


def ratchets(schema: dict, value: Any, old: Any) -> bool:
    """Whether errors of ``value`` are ratcheted: it equals its correlated old value.

    As on kube-apiserver 1.36, never below ``x-kubernetes-preserve-unknown-fields``
    (an embedded resource is one): such values never compare equal there.
    """
    return old == value and not schema_mentions(schema, f'"{PRESERVE}"')


def _map_list_olds(schema: dict, old: Any) -> dict[str, Any]:
    """The items of an old ``map`` list by their keys: what items of the new list correlate with."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if (
        schema.get("x-kubernetes-list-type") != "map"
        or not isinstance(keys, list)
        or not isinstance(old, list)
    ):
        return {}
    return {go_json([item.get(k) for k in keys]): item for item in old if isinstance(item, dict)}


def check_custom_object(
    schema: dict | None,
    obj: dict,
    *,
    status_only: bool = False,
    metadata_check: Callable[[dict, str], list[Cause]] | None = None,
    old: dict | None = None,
) -> tuple[dict, list[Cause], list[str]]:
    """``(object as stored, causes, pruned field paths)`` of a custom resource written against ``schema``.

    The object is a copy: pruned, nulls dropped, metadata coerced, defaulted
    (steps 1-4 of the module docstring); ``causes`` are the OpenAPI
    validation's (step 5; CEL rules are :mod:`._cel`'s). With ``status_only``
    (a write to ``/status``) only ``.status`` is validated and messages name
    fields relative to it, as the real server does. ``metadata_check(meta,
    path)`` validates an embedded resource's ObjectMeta. ``old`` (the stored
    object, on an update) ratchets: values it has unchanged are not validated.
    """
    if not isinstance(schema, dict):
        return obj, [], []
    result = _copy(obj)
    pruned: list[str] = []
    _prune(result, schema, "", pruned, resource_root=True)
    _prune_nulls(result, schema)
    _coerce_metadata(result, schema, "", pruned, resource_root=True)
    _default(result, schema)
    if status_only:
        validator = _Validator("status.", metadata_check)
        status_schema = _schema(_props(schema).get("status"))
        if "status" in result and status_schema is not None:
            previous = old.get("status", ABSENT) if isinstance(old, dict) else ABSENT
            validator.check(status_schema, result["status"], "status", old=previous)
        return result, validator.causes, pruned
    validator = _Validator("", metadata_check)
    validator.check(schema, result, "", resource_root=True, old=ABSENT if old is None else old)
    causes = sorted(
        validator.causes, key=lambda cause: cause[1]
    )  # by field: a stable order (the real one varies)
    return result, causes, sorted(pruned)


# -- the CRD's side: is a schema structural? --------------------------------------------------------

_ROOT, _ITEMS, _FIELD = "root", "items", "field"
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    (PRESERVE, "must be false to be structural"),
    (EMBEDDED, "must be false to be structural"),
    (INT_OR_STRING, "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _is_set(schema: dict, key: str) -> bool:
    value = schema.get(key)
    return value not in (None, False, "", [], {})


def structural_causes(schema: dict, path: str) -> list[Cause]:
    """Why ``schema`` (a version's ``openAPIV3Schema``) is not structural, as the real server words it.

    Sorted by message, as the real server sorts them. Never raises.
    """
    causes = _invariants(schema, _ROOT, path)
    causes.extend(_completeness(schema, path))
    causes.sort(key=lambda c: f"{c[1]}: {c[2]}")
    return causes


def _invariants(schema: dict, level: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = schema.get("type")
    kind = kind if isinstance(kind, str) else ""
    items = _schema(schema.get("items"))
    if kind == "array" and items is None:
        causes.append(("FieldValueRequired", f"{path}.items", "Required value: must be specified"))
    if items is not None:
        causes.extend(_invariants(items, _ITEMS, f"{path}.items"))
    for key, sub in _props(schema).items():
        if isinstance(sub, dict):
            causes.extend(_invariants(sub, _FIELD, f"{path}.properties[{key}]"))
    additional = schema.get("additionalProperties")
    if additional is not None and additional is not False:
        if level == _ROOT:
            causes.append(
                (
                    "FieldValueForbidden",
                    f"{path}.additionalProperties",
                    "Forbidden: must not be used at the root",
                )
            )
        if isinstance(additional, dict):
            causes.extend(_invariants(additional, _FIELD, f"{path}.additionalProperties"))
    int_or_string = schema.get(INT_OR_STRING) is True
    preserve = schema.get(PRESERVE) is True
    embedded = schema.get(EMBEDDED) is True
    if int_or_string and preserve:
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.{PRESERVE}",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.{EMBEDDED}",
                "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            )
        )
    causes.extend(_value_validation(schema, level, path))
    check_metadata = level == _ROOT or embedded
    if embedded and kind != "object":
        if not kind:
            causes.append(
                (
                    "FieldValueRequired",
                    f"{path}.type",
                    "Required value: must be object if x-kubernetes-embedded-resource is true",
                )
            )
        else:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.type",
                    f'Invalid value: "{kind}": must be object if x-kubernetes-embedded-resource is true',
                )
            )
    elif not kind and not int_or_string and not preserve:
        where = {
            _ROOT: "at the root",
            _ITEMS: "for specified array items",
            _FIELD: "for specified object fields",
        }[level]
        causes.append(
            ("FieldValueRequired", f"{path}.type", f"Required value: must not be empty {where}")
        )
    if embedded and additional is not None:
        causes.append(
            (
                "FieldValueForbidden",
                f"{path}.additionalProperties",
                "Forbidden: must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == _ROOT and kind and kind != "object":
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.type",
                f'Invalid value: "{kind}": must be object at the root',
            )
        )
    props = _props(schema)
    for key in ("kind", "apiVersion"):
        sub = _schema(props.get(key))
        if sub is not None and check_metadata and sub.get("type") != "string":
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.properties[{key}].type",
                    f"Invalid value: {go_json(sub.get('type') or '')}: must be string",
                )
            )
    metadata = _schema(props.get("metadata"))
    if metadata is not None:
        mpath = f"{path}.properties[metadata]"
        if check_metadata and metadata.get("type") != "object":
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{mpath}.type",
                    f"Invalid value: {go_json(metadata.get('type') or '')}: must be object",
                )
            )
        if level == _ROOT:
            rest = {
                k: v
                for k, v in metadata.items()
                if k not in ("type", "default") and v not in (None, False)
            }
            mprops = rest.pop("properties", None)
            if isinstance(mprops, dict) and set(mprops) <= {"name", "generateName"}:
                mprops = None
            if rest or mprops:
                causes.append(
                    (
                        "FieldValueForbidden",
                        mpath,
                        "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
                    )
                )
    if embedded and not preserve and not props:
        causes.append(
            (
                "FieldValueRequired",
                f"{path}.properties",
                "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            )
        )
    return causes


def _value_validation(schema: dict, level: str, path: str) -> list[Cause]:
    """anyOf/allOf/oneOf/not may only restrict values, never specify structure."""
    causes: list[Cause] = []
    any_of = schema.get("anyOf")
    all_of = schema.get("allOf")
    skip_any_of = any_of == _INT_OR_STRING_ANY_OF
    skip_first_all_of = (
        isinstance(all_of, list)
        and bool(all_of)
        and isinstance(all_of[0], dict)
        and all_of[0].get("anyOf") == _INT_OR_STRING_ANY_OF
    )
    for junctor in ("anyOf", "allOf", "oneOf"):
        branches = schema.get(junctor)
        if not isinstance(branches, list) or (junctor == "anyOf" and skip_any_of):
            continue
        for i, branch in enumerate(branches):
            if isinstance(branch, dict):
                skip = junctor == "allOf" and i == 0 and skip_first_all_of
                causes.extend(_nested(branch, level, f"{path}.{junctor}[{i}]", skip_any_of=skip))
    negated = schema.get("not")
    if isinstance(negated, dict):
        causes.extend(_nested(negated, level, f"{path}.not"))
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.pattern",
                    f"Invalid value: {go_json(pattern)}: must be a valid regular expression, but isn't: {exc}",
                )
            )
    return causes


def _nested(schema: dict, level: str, path: str, *, skip_any_of: bool = False) -> list[Cause]:
    causes = _value_validation(
        {k: v for k, v in schema.items() if not (skip_any_of and k == "anyOf")}, level, path
    )
    items = _schema(schema.get("items"))
    if items is not None:
        causes.extend(_nested(items, level, f"{path}.items"))
    for key, sub in _props(schema).items():
        if isinstance(sub, dict):
            causes.extend(_nested(sub, _FIELD, f"{path}.properties[{key}]"))
    for key, message in _NESTED_FORBIDDEN:
        if _is_set(schema, key):
            causes.append(("FieldValueForbidden", f"{path}.{key}", f"Forbidden: {message}"))
    if schema.get("nullable") is True:
        causes.append(
            ("FieldValueForbidden", f"{path}.nullable", "Forbidden: must be false to be structural")
        )
    if "metadata" in _props(schema):
        causes.append(
            (
                "FieldValueForbidden",
                f"{path}.properties[metadata]",
                "Forbidden: must not be specified in a nested context",
            )
        )
    return causes


def _completeness(schema: dict, path: str) -> list[Cause]:
    """Every field and item a value validation names is also specified outside of it."""
    causes: list[Cause] = []

    def spine_check(nested: dict, spine: dict | None, npath: str) -> None:
        for key, sub in _props(nested).items():
            where = _props(spine).get(key) if spine is not None else None
            if not isinstance(where, dict):
                additional = spine.get("additionalProperties") if spine is not None else None
                where = additional if isinstance(additional, dict) else None
            if where is None:
                causes.append(
                    (
                        "FieldValueRequired",
                        f"{npath}.properties[{key}]",
                        "Required value: must be specified outside of the value validation",
                    )
                )
            elif isinstance(sub, dict):
                spine_check(sub, where, f"{npath}.properties[{key}]")
        items = nested.get("items")
        if isinstance(items, dict):
            spine_items = _schema(spine.get("items")) if spine is not None else None
            if spine_items is None:
                causes.append(
                    (
                        "FieldValueRequired",
                        f"{npath}.items",
                        "Required value: must be specified outside of the value validation",
                    )
                )
            else:
                spine_check(items, spine_items, f"{npath}.items")
        for junctor in ("anyOf", "allOf", "oneOf"):
            for i, branch in enumerate(nested.get(junctor) or ()):
                if isinstance(branch, dict):
                    spine_check(branch, spine, f"{npath}.{junctor}[{i}]")
        if isinstance(nested.get("not"), dict):
            spine_check(nested["not"], spine, f"{npath}.not")

    for node, node_path in schema_nodes(schema, path):
        for junctor in ("anyOf", "allOf", "oneOf"):
            for i, branch in enumerate(node.get(junctor) or ()):
                if isinstance(branch, dict):
                    spine_check(branch, node, f"{node_path}.{junctor}[{i}]")
        if isinstance(node.get("not"), dict):
            spine_check(node["not"], node, f"{node_path}.not")
    return causes


def schema_type_causes(schema: Any, path: str) -> list[Cause]:
    """Malformed schema values (a ``type`` that is no type, a non-list ``required`` ...): never an exception later."""
    causes: list[Cause] = []
    if not isinstance(schema, dict):
        return [("FieldValueInvalid", path, f"Invalid value: {go_json(schema)}: must be an object")]
    kind = schema.get("type")
    if kind is not None and kind not in _TYPES:
        causes.append(
            (
                "FieldValueNotSupported",
                f"{path}.type",
                "Unsupported value: "
                + go_json(kind)
                + ": supported values: "
                + ", ".join(f'"{t}"' for t in _TYPES),
            )
        )
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, dict):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.properties",
                    f"Invalid value: {go_json(properties)}: must be an object",
                )
            )
        else:
            for key, sub in properties.items():
                causes.extend(schema_type_causes(sub, f"{path}.properties[{key}]"))
    items = schema.get("items")
    if items is not None:
        if not isinstance(items, dict):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.items",
                    f"Invalid value: {go_json(items)}: must be a schema",
                )
            )
        else:
            causes.extend(schema_type_causes(items, f"{path}.items"))
    additional = schema.get("additionalProperties")
    if additional is not None:
        if isinstance(additional, dict):
            causes.extend(schema_type_causes(additional, f"{path}.additionalProperties"))
        elif not isinstance(additional, bool):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.additionalProperties",
                    f"Invalid value: {go_json(additional)}: must be a boolean or a schema",
                )
            )
    for key in ("required", "enum", "anyOf", "allOf", "oneOf", "x-kubernetes-validations"):
        value = schema.get(key)
        if value is not None and not isinstance(value, list):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{key}",
                    f"Invalid value: {go_json(value)}: must be a list",
                )
            )
    for key in ("anyOf", "allOf", "oneOf"):
        branches = schema.get(key)
        for i, branch in enumerate(branches if isinstance(branches, list) else []):
            causes.extend(schema_type_causes(branch, f"{path}.{key}[{i}]"))
    if schema.get("not") is not None:
        causes.extend(schema_type_causes(schema.get("not"), f"{path}.not"))
    required = schema.get("required")
    if isinstance(required, list) and not all(isinstance(r, str) for r in required):
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.required",
                f"Invalid value: {go_json(required)}: must be a list of field names",
            )
        )
    for flag in (
        PRESERVE,
        INT_OR_STRING,
        EMBEDDED,
        "nullable",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "uniqueItems",
    ):
        if flag in schema and not isinstance(schema[flag], bool):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{flag}",
                    f"Invalid value: {go_json(schema[flag])}: must be a boolean",
                )
            )
    for key in (
        "minimum",
        "maximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
    ):
        value = schema.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{key}",
                    f"Invalid value: {go_json(value)}: must be a number",
                )
            )
    for key in ("pattern", "format", "x-kubernetes-list-type", "x-kubernetes-map-type"):
        value = schema.get(key)
        if value is not None and not isinstance(value, str):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{key}",
                    f"Invalid value: {go_json(value)}: must be a string",
                )
            )
    return causes


def crd_schema_causes(schema: dict, path: str) -> list[Cause]:
    """The rules of a CRD's schema beyond structure that a user meets (the real server's wording)."""
    causes: list[Cause] = []

    for node, npath in schema_nodes(schema, path):
        if node.get(PRESERVE) is False:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{npath}.{PRESERVE}",
                    "Invalid value: false: must be true or undefined",
                )
            )
        list_type = node.get("x-kubernetes-list-type")
        if list_type is not None and list_type not in ("atomic", "set", "map"):
            causes.append(
                (
                    "FieldValueNotSupported",
                    f"{npath}.x-kubernetes-list-type",
                    f'Unsupported value: {json.dumps(list_type)}: supported values: "atomic", "set", "map"',
                )
            )
        if node.get("uniqueItems") is True:
            causes.append(
                (
                    "FieldValueForbidden",
                    f"{npath}.uniqueItems",
                    "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                )
            )
        additional = node.get("additionalProperties")
        if additional is False:
            causes.append(
                (
                    "FieldValueForbidden",
                    f"{npath}.additionalProperties",
                    "Forbidden: additionalProperties cannot be set to false",
                )
            )
        if (
            additional is not None
            and additional is not False
            and isinstance(node.get("properties"), dict)
            and node["properties"]
        ):
            causes.append(
                (
                    "FieldValueForbidden",
                    f"{npath}.additionalProperties",
                    "Forbidden: additionalProperties and properties are mutual exclusive",
                )
            )
    causes.extend(default_causes(schema, path))
    return causes


def default_causes(schema: dict, path: str) -> list[Cause]:
    """A ``default`` must validate against its own node's schema (walked through properties and items).

    The real server names no field inside the default: ``Invalid value: -1:  in body should be ...``.
    """
    causes: list[Cause] = []

    def visit(node: dict, npath: str, root: bool) -> None:
        if "default" in node and not root:
            validator = _Validator("", None)
            validator.check(node, node["default"], "")
            for reason, field, message in validator.causes:
                causes.append(
                    (reason, f"{npath}.default" + (f".{field}" if field else ""), message)
                )
        for key, sub in _props(node).items():
            if isinstance(sub, dict) and not (root and key == "metadata"):
                visit(sub, f"{npath}.properties[{key}]", False)
        items = node.get("items")
        if isinstance(items, dict):
            visit(items, f"{npath}.items", False)

    visit(schema, path, True)
    return causes
