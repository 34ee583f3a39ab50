"""``CustomResource``: a custom resource defined in Python, and the CRD it generates.

A :class:`CustomResource` names the group, kind, scope and names, and lists
its :class:`Version` s, each with the root type of its objects (a TypedDict
holding ``spec`` and ``status``), its printer columns and subresources.
:meth:`CustomResource.definition` builds the CustomResourceDefinition (a
plain dict, ready for ``kubectl apply`` as YAML or for a client's create);
:meth:`CustomResource.resource` is the :class:`~pyinformers.api.Resource`
that clients, informers and listers take.

Everything is checked when the CRD is built, with a one-line
:class:`~pyinformers.crd.SchemaError` for what the API server would refuse
(no storage version, two, a printer column on a missing field ...).
Values are immutable after construction; safe to share between threads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pyinformers.api import Resource
from pyinformers.crd._markers import Rule
from pyinformers.crd._schema import SchemaError, object_schema

__all__ = ["CustomResource", "Version", "PrinterColumn", "Scale", "plural_of"]

_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


@dataclass(frozen=True)
class PrinterColumn:
    """``+kubebuilder:printcolumn``: a column of ``kubectl get``.

    ``type`` is inferred from the schema at ``json_path`` when that path is a
    plain field path (``.spec.replicas``), else ``string``; ``format`` and
    ``priority`` (0 shows in the default view, more only with ``-o wide``)
    are passed through.
    """

    name: str
    json_path: str
    type: Literal["integer", "number", "string", "boolean", "date"] | None = None
    format: str | None = None
    description: str | None = None
    priority: int = 0


@dataclass(frozen=True)
class Scale:
    """``+kubebuilder:subresource:scale``: where the replica counts and the selector live."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None


@dataclass(frozen=True)
class Version:
    """One version of a custom resource: its name, the root type of its objects, how it is served.

    ``status=None`` (the default) gives the status subresource exactly when
    the type has a ``status`` key; ``True`` or ``False`` says so explicitly.
    ``rules`` are CEL rules on the whole object (``self.metadata.name`` ...).
    """

    name: str
    type: Any
    served: bool = True
    storage: bool = False
    status: bool | None = None
    scale: Scale | None = None
    printer_columns: Sequence[PrinterColumn] = ()
    deprecated: bool = False
    deprecation_warning: str | None = None
    selectable_fields: Sequence[str] = ()
    rules: Sequence[Rule] = ()


@dataclass(frozen=True)
class CustomResource:
    """A custom resource: ``CustomResource(group=..., kind=..., versions=[Version("v1", CronJob)])``.

    ``plural`` defaults to the lower-cased kind made plural the English way
    (``Policy`` -> ``policies``), ``singular`` to the lower-cased kind,
    ``list_kind`` to ``<kind>List``. One version that does not say
    ``storage`` is the storage version; with several, exactly one must.
    """

    group: str
    kind: str
    versions: Sequence[Version]
    plural: str | None = None
    singular: str | None = None
    list_kind: str | None = None
    short_names: Sequence[str] = ()
    categories: Sequence[str] = ()
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"CustomResource {self.kind!r}"
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", self.kind or ""):
            raise SchemaError(
                f"{where}: kind must be CamelCase letters and digits, got {self.kind!r}"
            )
        if not re.fullmatch(
            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+", self.group or ""
        ):
            raise SchemaError(
                f"{where}: group must be a DNS domain with a dot (example.com), got {self.group!r}"
            )
        if self.scope not in ("Namespaced", "Cluster"):
            raise SchemaError(f"{where}: scope must be Namespaced or Cluster, got {self.scope!r}")
        versions = list(self.versions)
        if not versions or not all(isinstance(v, Version) for v in versions):
            raise SchemaError(f"{where}: versions must be a non-empty list of Version")
        names = [v.name for v in versions]
        for name in names:
            if not re.fullmatch(r"v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?", name):
                raise SchemaError(
                    f"{where}: version {name!r} is not a Kubernetes version (v1, v1beta2, v2alpha1)"
                )
        if len(set(names)) != len(names):
            raise SchemaError(f"{where}: a version is listed twice: {names}")
        storage = [v.name for v in versions if v.storage]
        if len(versions) == 1 and not storage:
            object.__setattr__(self, "versions", (_replace(versions[0], storage=True),))
        elif len(storage) != 1:
            raise SchemaError(
                f"{where}: exactly one version must be the storage version, got {storage or 'none'}"
            )
        else:
            object.__setattr__(self, "versions", tuple(versions))
        if not any(v.served for v in self.versions):
            raise SchemaError(f"{where}: no version is served")
        for attr in ("plural", "singular"):
            value = getattr(self, attr)
            if value is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value):
                raise SchemaError(f"{where}: {attr} must be lower-case DNS label, got {value!r}")
        object.__setattr__(self, "short_names", tuple(self.short_names))
        object.__setattr__(self, "categories", tuple(self.categories))

    @property
    def names(self) -> dict[str, Any]:
        """``spec.names`` of the CRD."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "listKind": self.list_kind or f"{self.kind}List",
            "plural": self.plural or plural_of(self.kind),
            "singular": self.singular or self.kind.lower(),
        }
        if self.short_names:
            out["shortNames"] = list(self.short_names)
        if self.categories:
            out["categories"] = list(self.categories)
        return out

    @property
    def name(self) -> str:
        """The CRD's name: ``<plural>.<group>``."""
        return f"{self.names['plural']}.{self.group}"

    @property
    def storage_version(self) -> Version:
        return next(v for v in self.versions if v.storage)

    def version(self, name: str | None = None) -> Version:
        """The version called ``name`` (default: the storage version)."""
        if name is None:
            return self.storage_version
        for version in self.versions:
            if version.name == name:
                return version
        raise SchemaError(
            f"CustomResource {self.kind!r}: no version {name!r} (has {', '.join(v.name for v in self.versions)})"
        )

    def resource(self, version: str | None = None) -> Resource[Any]:
        """The :class:`~pyinformers.api.Resource` of ``version`` (default: the storage version).

        Annotate it with the root type for typed listers and clients:
        ``CRONJOBS: Resource[CronJob] = CRONJOB.resource()``.
        """
        chosen = self.version(version)
        return Resource(
            self.group, chosen.name, self.names["plural"], self.kind, self.scope == "Namespaced"
        )

    def definition(self) -> dict[str, Any]:
        """The CustomResourceDefinition (apiextensions.k8s.io/v1) as a dict."""
        metadata: dict[str, Any] = {"name": self.name}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {
                "group": self.group,
                "names": self.names,
                "scope": self.scope,
                "versions": [self._version(v) for v in self.versions],
            },
        }

    def _version(self, version: Version) -> dict[str, Any]:
        where = f"CustomResource {self.kind!r} version {version.name}"
        cls = version.type
        if not isinstance(cls, type):
            raise SchemaError(f"{where}: type must be a TypedDict or dataclass class, got {cls!r}")
        schema = object_schema(cls, root=True)
        for rule in version.rules:
            rule.apply(schema)
        out: dict[str, Any] = {
            "name": version.name,
            "served": version.served,
            "storage": version.storage,
        }
        if version.deprecated:
            out["deprecated"] = True
            if version.deprecation_warning:
                out["deprecationWarning"] = version.deprecation_warning
        columns = [self._column(column, schema, where) for column in version.printer_columns]
        if columns:
            out["additionalPrinterColumns"] = columns
        out["schema"] = {"openAPIV3Schema": schema}
        if version.selectable_fields:
            out["selectableFields"] = [{"jsonPath": path} for path in version.selectable_fields]
        has_status = "status" in schema.get("properties", {})
        status = has_status if version.status is None else version.status
        if status and not has_status:
            raise SchemaError(
                f"{where}: the status subresource needs a 'status' field in {cls.__name__}"
            )
        subresources: dict[str, Any] = {}
        if status:
            subresources["status"] = {}
        if version.scale is not None:
            scale = version.scale
            for path in (scale.spec_replicas_path, scale.status_replicas_path):
                _check_path(schema, path, f"{where}: Scale")
            subresources["scale"] = {
                "specReplicasPath": scale.spec_replicas_path,
                "statusReplicasPath": scale.status_replicas_path,
            }
            if scale.label_selector_path:
                subresources["scale"]["labelSelectorPath"] = scale.label_selector_path
        if subresources:
            out["subresources"] = subresources
        return out

    def _column(
        self, column: PrinterColumn, schema: Mapping[str, Any], where: str
    ) -> dict[str, Any]:
        where = f"{where}: PrinterColumn {column.name!r}"
        if not column.json_path.startswith("."):
            raise SchemaError(f"{where}: json_path must start with '.', got {column.json_path!r}")
        kind: str | None = column.type
        if kind is None:
            found = (
                _check_path(schema, column.json_path, where) if _plain(column.json_path) else None
            )
            kind = _column_type(found)
        elif kind not in _COLUMN_TYPES:
            raise SchemaError(
                f"{where}: type must be one of {', '.join(_COLUMN_TYPES)}, got {kind!r}"
            )
        out: dict[str, Any] = {"name": column.name, "type": kind, "jsonPath": column.json_path}
        if column.format:
            out["format"] = column.format
        if column.description:
            out["description"] = column.description
        if column.priority:
            out["priority"] = column.priority
        return out


def _replace(version: Version, **changes: Any) -> Version:
    from dataclasses import replace

    return replace(version, **changes)


def _plain(path: str) -> bool:
    return bool(re.fullmatch(r"(\.[A-Za-z_][A-Za-z0-9_-]*)+", path))


def _check_path(schema: Mapping[str, Any], path: str, where: str) -> Mapping[str, Any] | None:
    """The schema at a plain ``.a.b`` path; a :class:`SchemaError` when the types have no such field."""
    if not _plain(path):
        return None
    parts = path.strip(".").split(".")
    if parts[0] in ("apiVersion", "kind", "metadata"):  # the server's fields
        return (
            {"type": "string", "format": "date-time"}
            if parts == ["metadata", "creationTimestamp"]
            else None
        )
    node: Mapping[str, Any] = schema
    for part in parts:
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return None
        properties = node.get("properties")
        additional = node.get("additionalProperties")
        if isinstance(properties, Mapping) and part in properties:
            node = properties[part]
        elif isinstance(additional, Mapping):
            node = additional
        else:
            raise SchemaError(f"{where}: the types have no field {path!r} (no {part!r})")
    return node


def _column_type(schema: Mapping[str, Any] | None) -> str:
    if schema is None:
        return "string"
    kind = schema.get("type")
    if kind in ("integer", "number", "boolean"):
        return str(kind)
    if kind == "string" and schema.get("format") == "date-time":
        return "date"
    return "string"


def plural_of(kind: str) -> str:
    """The lower-cased plural of a kind, the English way (``Policy`` -> ``policies``, ``Ingress`` -> ``ingresses``)."""
    word = kind.lower()
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", word):
        return word + "es"
    return word + "s"
