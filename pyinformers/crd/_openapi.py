"""The built-in types' schemas: the API server's OpenAPI v3 definitions, made structural.

``_openapi.json.gz`` (next to this module; ``hack/crd/openapi.py`` regenerates
it from a real kube-apiserver and records its version) holds the OpenAPI v3
component schemas reachable from the kinds of :mod:`pyinformers.resources`,
``$ref`` s shortened to the definition name. :func:`builtin_schema` converts
one to what a CRD accepts, the way controller-gen does from the Go types:

* ``$ref`` and the ``allOf: [$ref]`` wrapper (with its sibling description) are inlined;
* ``IntOrString`` and ``Quantity`` become ``x-kubernetes-int-or-string``
  (Quantity with its pattern), ``RawExtension`` an object that preserves
  unknown fields, ``Time``/``MicroTime`` a ``date-time`` string;
* an ``ObjectMeta`` below the root keeps what a template may set (name,
  namespace, labels, annotations, finalizers: controller-gen's
  ``generateEmbeddedObjectMeta``); a nested kind is an embedded resource;
* what CRDs refuse or ignore is dropped: ``uniqueItems``, the
  ``x-kubernetes-patch-*``, ``group-version-kind`` and ``unions`` extensions,
  defaults that are Go zero values (``{}``, ``""``, ``0``, ``false``), which
  the documents give every non-pointer field.

The file is read once, on first use, under a lock; results are deep copies,
so callers may change them. Safe from any thread.
"""

from __future__ import annotations

import copy
import gzip
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyinformers.crd._markers import QUANTITY_PATTERN
from pyinformers.crd._schema import SchemaError

__all__ = ["builtin_schema", "definitions", "kubernetes_version", "ref_name", "EXTRACT"]

EXTRACT = Path(__file__).with_name("_openapi.json.gz")

_lock = threading.Lock()
_document: dict[str, Any] | None = None
_converted: dict[str, dict[str, Any]] = {}

#: the JSONSchemaProps keywords a CRD schema may carry, as the converter keeps them
_KEEP = frozenset(
    {
        "description",
        "type",
        "format",
        "title",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    }
)

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = _META + "ObjectMeta"
_SPECIAL: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    },
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    },
    _META + "Time": {"type": "string", "format": "date-time"},
    _META + "MicroTime": {"type": "string", "format": "date-time"},
    _META + "FieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
#: what an ObjectMeta below the root keeps (the rest the server would prune anyway)
_EMBEDDED_META = ("annotations", "finalizers", "labels", "name", "namespace")


def _load() -> dict[str, Any]:
    global _document
    with _lock:
        if _document is None:
            try:
                with gzip.open(EXTRACT, "rt", encoding="utf-8") as handle:
                    _document = json.load(handle)
            except OSError as error:
                raise SchemaError(
                    f"the built-in schemas ({EXTRACT.name}) cannot be read: {error}"
                ) from None
        return _document


def definitions() -> Mapping[str, Any]:
    """Every OpenAPI definition shipped, by name (``io.k8s.api.core.v1.PodSpec``); do not mutate."""
    return _load()["definitions"]


def kubernetes_version() -> str:
    """The kube-apiserver version the shipped definitions come from (``v1.36.3``)."""
    return str(_load()["kubernetes"])


def builtin_schema(name: str) -> dict[str, Any]:
    """The structural CRD schema of the definition ``name`` used inside a spec (a fresh copy)."""
    with _lock:
        cached = _converted.get(name)
    if cached is None:
        cached = _Converter(definitions()).definition(name, [], nested=True)
        with _lock:
            _converted[name] = cached
    return copy.deepcopy(cached)


class _Converter:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs

    def definition(self, name: str, stack: list[str], *, nested: bool) -> dict[str, Any]:
        if name in _SPECIAL:
            return copy.deepcopy(_SPECIAL[name])
        if name in stack:
            cycle = " -> ".join([*stack[stack.index(name) :], name])
            raise SchemaError(
                f"{name}: recursive built-in type ({cycle}) cannot be in a CRD schema"
            )
        node = self.defs.get(name)
        if node is None:
            raise SchemaError(f"{name}: no such built-in definition in {EXTRACT.name}")
        stack.append(name)
        try:
            out = self.node(node, stack)
        finally:
            stack.pop()
        if name == OBJECT_META and nested:
            out["properties"] = {
                k: v for k, v in out.get("properties", {}).items() if k in _EMBEDDED_META
            }
        elif nested and node.get("x-kubernetes-group-version-kind"):
            out["x-kubernetes-embedded-resource"] = True
        return out

    def node(self, node: Mapping[str, Any], stack: list[str]) -> dict[str, Any]:
        ref = ref_name(node)
        if ref is not None:
            inlined = self.definition(ref, stack, nested=True)
            if "description" in node:
                inlined["description"] = node["description"]
            if "default" in node and not _zero(node["default"]):
                inlined["default"] = node["default"]
            return inlined
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {k: self.node(v, stack) for k, v in value.items()}
            elif key == "items":
                out[key] = self.node(value, stack)
            elif key == "additionalProperties":
                if isinstance(value, Mapping):
                    out[key] = self.node(value, stack)
            elif key == "default" and _zero(value):
                continue
            elif key in _KEEP:
                out[key] = copy.deepcopy(value)
        self.keep_key_defaults(node, out)
        if (
            "type" not in out
            and not out.get("x-kubernetes-int-or-string")
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["x-kubernetes-preserve-unknown-fields"] = (
                True  # a definition with no type: any JSON value
            )
        return out

    def keep_key_defaults(self, node: Mapping[str, Any], out: dict[str, Any]) -> None:
        """A list-map key that is not required keeps its default, zero or not, or gets its type's zero
        value: the server refuses a map-list whose keys may be missing."""
        keys = out.get("x-kubernetes-list-map-keys")
        items = out.get("items")
        if not keys or not isinstance(items, dict):
            return
        raw = node.get("items") or {}
        name = ref_name(raw)
        raw_properties = (self.defs.get(name, {}) if name else raw).get("properties") or {}
        for key in keys:
            prop = (items.get("properties") or {}).get(key)
            if prop is None or key in (items.get("required") or ()) or "default" in prop:
                continue
            raw_prop = raw_properties.get(key) or {}
            if "default" in raw_prop:
                prop["default"] = copy.deepcopy(raw_prop["default"])
            elif prop.get("type") in _ZERO:  # what Go reads for a key left out
                prop["default"] = _ZERO[prop["type"]]


_ZERO: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}


def _zero(value: Any) -> bool:
    """A Go zero value as a default (``{}``, ``[]``, ``""``, ``0``, ``false``): the OpenAPI documents
    carry one for every non-pointer field; a CRD would apply it to every object (controller-gen
    writes only the defaults a ``+default`` marker asks for, such as a port's ``TCP``)."""
    return value in ({}, [], "", 0, False, None) and not (isinstance(value, float) and value != 0)


def ref_name(node: Mapping[str, Any]) -> str | None:
    """The definition a ``$ref`` (or an ``allOf: [$ref]`` wrapper) names: its last path segment."""
    if isinstance(node.get("$ref"), str):
        return str(node["$ref"]).rsplit("/", 1)[-1]
    all_of = node.get("allOf")
    if (
        isinstance(all_of, list)
        and len(all_of) == 1
        and isinstance(all_of[0], Mapping)
        and "$ref" in all_of[0]
    ):
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None
