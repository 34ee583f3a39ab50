"""The shape of objects as server-side apply sees it: structs, maps, lists and how each merges.

A :class:`Shape` says how one node of an object merges and what of it a
manager owns:

* ``struct``: named fields, merged field by field (``x-kubernetes-map-type:
  atomic`` makes it one value);
* ``map``: arbitrary keys with one element shape (labels, ``data``,
  ``additionalProperties``), granular unless atomic;
* ``list``: ``atomic`` (replaced whole: the default for custom resources and
  for built-in lists without a merge key), ``set`` (scalars merged as a set) or
  ``map`` (items merged by their key fields: containers by ``name``, ports by
  ``containerPort`` and ``protocol``...);
* ``scalar``;
* ``deduced``: no schema (``x-kubernetes-preserve-unknown-fields``): objects
  are granular maps, lists atomic.

:func:`shape_for_crd` compiles a CRD version's OpenAPI v3 schema;
:func:`shape_for_builtin` gives the built-in kinds the embedded server serves
their list semantics (the ``x-kubernetes-list-type``/``list-map-keys`` of
kube-apiserver 1.36's OpenAPI, by field name in context; other fields are
generic structs, so maps of structs there count as structs).

Shapes are immutable once built and shared; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Shape", "DEDUCED", "SCALAR", "shape_for_crd", "shape_for_builtin", "UnknownListType"]


class UnknownListType(ValueError):
    """A schema names an ``x-kubernetes-list-type`` other than atomic, set or map."""


@dataclass(eq=False)
class Shape:
    """One node's merge semantics (see the module docstring)."""

    kind: str  # "struct" | "map" | "list" | "scalar" | "deduced"
    fields: dict[str, Shape] = field(default_factory=dict)
    #: map values, list items, and a struct's undeclared fields (None: generic built-in struct)
    element: Shape | None = None
    atomic: bool = False
    list_type: str = "atomic"
    keys: tuple[str, ...] = ()
    key_defaults: Mapping[str, Any] = field(default_factory=dict)
    #: a generic built-in struct: every field declared, its shape chosen by name and value
    generic: dict[str, Shape] | None = None

    def child(self, name: str, value: Any) -> Shape:
        """The shape of field or key ``name`` holding ``value``."""
        if self.kind == "struct":
            found = self.fields.get(name)
            if found is not None:
                return found
            if self.generic is not None:
                return self.generic.get(name) or _generic_child(self.generic, value)
            return self.element or DEDUCED
        if self.kind == "map":
            return self.element or DEDUCED
        return DEDUCED

    def declares(self, name: str) -> bool:
        """Whether ``name`` is a declared field (a struct's, not a map key)."""
        return self.kind == "struct" and (name in self.fields or self.generic is not None)

    def item(self) -> Shape:
        return self.element or DEDUCED


DEDUCED = Shape("deduced")
SCALAR = Shape("scalar")
_ATOMIC_LIST = Shape("list", list_type="atomic")
_ATOMIC_STRUCT = Shape("struct", atomic=True)


def _generic_child(table: dict[str, Shape], value: Any) -> Shape:
    if isinstance(value, dict):
        return _generic(table)
    if isinstance(value, list):
        return _ATOMIC_LIST
    return SCALAR


_GENERIC_CACHE: dict[int, Shape] = {}


def _generic(table: dict[str, Shape]) -> Shape:
    cached = _GENERIC_CACHE.get(id(table))
    if cached is None:
        cached = _GENERIC_CACHE[id(table)] = Shape("struct", generic=table)
    return cached


# -- custom resources -------------------------------------------------------------------


def shape_for_crd(schema: Mapping[str, Any] | None) -> Shape:
    """The shape of a custom resource whose version has ``schema`` (its openAPIV3Schema)."""
    root = _from_openapi(schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    if root.kind != "struct":
        root = Shape("struct", element=DEDUCED)
    fields = dict(root.fields)
    fields["metadata"] = OBJECT_META
    fields.setdefault("apiVersion", SCALAR)
    fields.setdefault("kind", SCALAR)
    return Shape("struct", fields=fields, element=root.element, atomic=False)


def _from_openapi(schema: Mapping[str, Any]) -> Shape:
    if not isinstance(schema, Mapping):
        return DEDUCED
    if schema.get("x-kubernetes-int-or-string"):
        return SCALAR
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        element = _from_openapi(items) if isinstance(items, Mapping) else DEDUCED
        list_type = schema.get("x-kubernetes-list-type", "atomic")
        if list_type not in ("atomic", "set", "map"):
            raise UnknownListType(f"unknown x-kubernetes-list-type {list_type!r}")
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ()) if list_type == "map" else ()
        defaults = {}
        if keys and isinstance(items, Mapping):
            for key in keys:
                sub = (items.get("properties") or {}).get(key) or {}
                if isinstance(sub, Mapping) and "default" in sub:
                    defaults[key] = sub["default"]
        return Shape("list", element=element, list_type=list_type, keys=keys, key_defaults=defaults)
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        atomic = schema.get("x-kubernetes-map-type") == "atomic"
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        if isinstance(properties, Mapping) and properties:
            fields = {name: _from_openapi(sub) for name, sub in properties.items()}
            if schema.get("x-kubernetes-embedded-resource"):
                fields["metadata"] = OBJECT_META
            rest = DEDUCED if schema.get("x-kubernetes-preserve-unknown-fields") else None
            return Shape("struct", fields=fields, element=rest, atomic=atomic)
        if isinstance(additional, Mapping):
            return Shape("map", element=_from_openapi(additional), atomic=atomic)
        if schema.get("x-kubernetes-preserve-unknown-fields") or additional is True:
            return Shape("map", element=DEDUCED, atomic=atomic)
        if schema.get("x-kubernetes-embedded-resource"):
            return Shape("struct", fields={"metadata": OBJECT_META}, element=DEDUCED, atomic=atomic)
        return Shape("struct", atomic=atomic)
    if kind is None and schema.get("x-kubernetes-preserve-unknown-fields"):
        return DEDUCED
    return SCALAR


# -- built-in kinds ----------------------------------------------------------------------


def _map_list(*keys: str, element: Shape | None = None, **defaults: Any) -> Shape:
    return Shape(
        "list",
        element=element or _generic(_COMMON),
        list_type="map",
        keys=keys,
        key_defaults=defaults,
    )


_COMMON: dict[str, Shape] = {}
_COMMON.update(
    {
        "conditions": _map_list("type"),
        # LabelSelector is a structType=atomic; Service and ReplicationController selectors mapType=atomic.
        "selector": _ATOMIC_STRUCT,
        "podSelector": _ATOMIC_STRUCT,
        "namespaceSelector": _ATOMIC_STRUCT,
        "labelSelector": _ATOMIC_STRUCT,
    }
)

OBJECT_META = Shape(
    "struct",
    fields={
        "finalizers": Shape("list", element=SCALAR, list_type="set"),
        "ownerReferences": _map_list("uid"),
        "labels": Shape("map", element=SCALAR),
        "annotations": Shape("map", element=SCALAR),
        "managedFields": _ATOMIC_LIST,
    },
    generic=_COMMON,
)

_CONTAINER_TABLE = dict(
    _COMMON,
    ports=_map_list("containerPort", "protocol", protocol="TCP"),
    env=_map_list("name"),
    volumeMounts=_map_list("mountPath"),
    volumeDevices=_map_list("devicePath"),
    resizePolicy=_map_list("resourceName"),
)
_CONTAINER = _generic(_CONTAINER_TABLE)
_POD_SPEC_TABLE = dict(
    _COMMON,
    containers=_map_list("name", element=_CONTAINER),
    initContainers=_map_list("name", element=_CONTAINER),
    ephemeralContainers=_map_list("name", element=_CONTAINER),
    volumes=_map_list("name"),
    imagePullSecrets=_map_list("name"),
    hostAliases=_map_list("ip"),
    topologySpreadConstraints=_map_list("topologyKey", "whenUnsatisfiable"),
    resourceClaims=_map_list("name"),
    schedulingGates=_map_list("name"),
)
_POD_SPEC = _generic(_POD_SPEC_TABLE)
_POD_STATUS = _generic(
    dict(_COMMON, containerStatuses=_ATOMIC_LIST, podIPs=_map_list("ip"), hostIPs=_map_list("ip"))
)
_TEMPLATE = Shape("struct", fields={"metadata": OBJECT_META, "spec": _POD_SPEC}, generic=_COMMON)
_WORKLOAD_SPEC = _generic(dict(_COMMON, template=_TEMPLATE))
_SERVICE_SPEC = _generic(dict(_COMMON, ports=_map_list("port", "protocol", protocol="TCP")))
_JOB_TEMPLATE = Shape(
    "struct", fields={"metadata": OBJECT_META, "spec": _WORKLOAD_SPEC}, generic=_COMMON
)

_SPECS: dict[str, Shape] = {
    "Pod": _POD_SPEC,
    "PodTemplate": _TEMPLATE,
    "Deployment": _WORKLOAD_SPEC,
    "ReplicaSet": _WORKLOAD_SPEC,
    "StatefulSet": _WORKLOAD_SPEC,
    "DaemonSet": _WORKLOAD_SPEC,
    "ReplicationController": _WORKLOAD_SPEC,
    "Job": _WORKLOAD_SPEC,
    "CronJob": _generic(dict(_COMMON, jobTemplate=_JOB_TEMPLATE)),
    "Service": _SERVICE_SPEC,
}
_BUILTIN_CACHE: dict[str, Shape] = {}


def shape_for_builtin(kind: str) -> Shape:
    """The shape of a built-in kind (see the module docstring)."""
    cached = _BUILTIN_CACHE.get(kind)
    if cached is None:
        fields = {"metadata": OBJECT_META, "apiVersion": SCALAR, "kind": SCALAR}
        if kind in _SPECS:
            fields["spec"] = _SPECS[kind] if kind != "PodTemplate" else _generic(_COMMON)
        if kind == "PodTemplate":
            fields["template"] = _TEMPLATE
        if kind == "Pod":
            fields["status"] = _POD_STATUS
        cached = _BUILTIN_CACHE[kind] = Shape("struct", fields=fields, generic=_COMMON)
    return cached
