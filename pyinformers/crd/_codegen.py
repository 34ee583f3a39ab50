"""CRDs to Python: a module of TypedDicts (and the ``CustomResource`` that regenerates the CRD).

:func:`types_module` reads a CustomResourceDefinition and writes the source
of a module with a ``TypedDict`` per object of each served version's schema
(the kind's root, ``<Kind>Spec``, ``<Kind>Status``, nested objects named by
their path, array items ``...Item``, map values ``...Value``), ``Literal`` for
enums, ``NotRequired`` for optional fields, ``Optional`` for nullable ones and
the markers of :mod:`pyinformers.crd._markers` for every other keyword, so
that the module's ``CustomResource`` generates the same CRD again. A
:class:`Resource` per served version closes it.

The writer (:class:`ModuleWriter`) is shared with the built-in types of
:mod:`pyinformers.crd.k8s`, which name their classes after OpenAPI
definitions and leave markers out. A schema that is not structural is a
one-line :class:`~pyinformers.crd.SchemaError` naming the CRD, version and path.
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyinformers.crd._openapi import ref_name
from pyinformers.crd._schema import ROOT_FIELDS, SchemaError

__all__ = ["ModuleWriter", "types_module", "pascal", "upper_snake"]

#: names the generated module imports: a class called so gets a trailing underscore
RESERVED = frozenset(
    {
        "Any",
        "Literal",
        "Optional",
        "Union",
        "Annotated",
        "NotRequired",
        "TypedDict",
        "Resource",
        "crd",
        "k8s",
    }
)

# Keywords a marker stands for: keyword -> (marker, how the value is written)
_VALUE_MARKERS = {
    "multipleOf": "MultipleOf",
    "minLength": "MinLength",
    "maxLength": "MaxLength",
    "pattern": "Pattern",
    "format": "Format",
    "minItems": "MinItems",
    "maxItems": "MaxItems",
    "minProperties": "MinProperties",
    "maxProperties": "MaxProperties",
    "default": "Default",
    "title": "Title",
    "example": "Example",
}
_FLAG_MARKERS = {
    "uniqueItems": "UniqueItems",
    "x-kubernetes-embedded-resource": "EmbeddedResource",
    "x-kubernetes-preserve-unknown-fields": "PreserveUnknownFields",
}
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
_LITERAL_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
}


def pascal(text: str) -> str:
    """``"jobTemplate"`` -> ``"JobTemplate"``, ``"x-foo_bar"`` -> ``"XFooBar"`` (a valid identifier part)."""
    parts = re.split(r"[^A-Za-z0-9]+", text)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    return out or "Field"


def upper_snake(text: str) -> str:
    """``"CronJob"`` -> ``"CRON_JOB"``; ``"cronjobs"`` -> ``"CRONJOBS"``."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()


def _docstring(text: str, indent: str) -> str | None:
    """``text`` as a docstring that :func:`inspect.cleandoc` reads back exactly, or None if none does."""
    if not text or '"""' in text or "\\" in text or text.endswith('"') or text != text.strip():
        return None
    lines = text.split("\n")
    body = (
        lines[0]
        if len(lines) == 1
        else "\n".join([lines[0]] + [indent + line if line else "" for line in lines[1:]])
        + "\n"
        + indent
    )
    if inspect.cleandoc(body) != text:
        return None
    return f'{indent}"""{body}"""'


class ModuleWriter:
    """Writes TypedDicts for schemas, children before parents so no name is used before it exists.

    ``markers=False`` leaves validation out (plain static types);
    ``resolve`` maps a ``$ref`` to the Python name of its class (the built-ins).
    """

    def __init__(
        self,
        *,
        markers: bool = True,
        docs: bool = True,
        resolve: Callable[[str], str] | None = None,
        reserved: frozenset[str] = RESERVED,
    ) -> None:
        self.markers = markers
        self.docs = docs
        self.resolve = resolve
        self.blocks: list[str] = []
        self.taken: set[str] = set(reserved)
        self.where = ""

    def unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.taken:
            candidate, n = f"{name}{n}", n + 1
        self.taken.add(candidate)
        return candidate

    # -- types -----------------------------------------------------------------------------
    def type_expr(
        self, schema: Mapping[str, Any], hint: str, path: str, *, describe: bool = True
    ) -> str:
        """The type expression of ``schema`` (emitting the classes it needs), markers included."""
        if not isinstance(schema, Mapping):
            raise SchemaError(
                f"{self.where}: {path or '.'}: a schema must be a mapping, got {schema!r}"
            )
        schema = dict(schema)
        ref = ref_name(schema)
        if ref is not None and self.resolve is not None:
            base = self.resolve(ref)
            for key in ("$ref", "allOf"):
                schema.pop(key, None)
            return self._finish(base, schema, describe)
        kind = schema.pop("type", None)
        if kind is None:
            if schema.get("x-kubernetes-int-or-string"):
                schema.pop("x-kubernetes-int-or-string")
                if schema.get("anyOf") == [{"type": "integer"}, {"type": "string"}]:
                    schema.pop("anyOf")
                base = "crd.IntOrString" if self.markers else "Union[int, str]"
                if self.markers and schema.get("pattern") == _quantity_pattern():
                    schema.pop("pattern")
                    base = "crd.Quantity"
            elif schema.get("x-kubernetes-preserve-unknown-fields"):
                schema.pop("x-kubernetes-preserve-unknown-fields")
                base = "Any"
            else:
                raise SchemaError(
                    f"{self.where}: not a structural schema: {path or '.'} has no type "
                    "(and is neither int-or-string nor preserve-unknown-fields)"
                )
        elif kind in ("string", "integer", "boolean") and _literal_enum(schema.get("enum"), kind):
            base = f"Literal[{', '.join(repr(v) for v in schema.pop('enum'))}]"
        elif kind in _SCALARS:
            base = _SCALARS[kind]
        elif kind == "array":
            items = schema.pop("items", None)
            if items is None:
                raise SchemaError(
                    f"{self.where}: not a structural schema: array {path or '.'} has no items"
                )
            base = f"list[{self.type_expr(items, hint + 'Item', path + '[*]')}]"
        elif kind == "object":
            properties = schema.pop("properties", None)
            additional = schema.get("additionalProperties")
            if properties is not None:
                base = self.typed_dict(
                    hint, {"properties": properties, "required": schema.pop("required", [])}, path
                )
            elif isinstance(additional, Mapping):
                schema.pop("additionalProperties")
                value = self.type_expr(additional, hint + "Value", path + "{*}")
                if (
                    value == "Any" and self.markers
                ):  # dict[str, Any] alone is an object keeping unknown fields
                    value = "Annotated[Any, crd.PreserveUnknownFields()]"
                base = f"dict[str, {value}]"
            elif schema.get("x-kubernetes-preserve-unknown-fields") is True:
                schema.pop("x-kubernetes-preserve-unknown-fields")
                base = "dict[str, Any]"
            elif self.markers or self.resolve is None:
                base = self.typed_dict(
                    hint, {"properties": {}, "required": schema.pop("required", [])}, path
                )
            else:
                base = "dict[str, Any]"
        else:
            raise SchemaError(f"{self.where}: {path or '.'}: unknown type {kind!r}")
        return self._finish(base, schema, describe)

    def _finish(self, base: str, schema: dict[str, Any], describe: bool) -> str:
        nullable = bool(schema.pop("nullable", False))
        if not describe or not self.markers:
            schema.pop("description", None)
        found = self._markers(schema) if self.markers else []
        expr = f"Annotated[{base}, {', '.join(found)}]" if found else base
        return f"Optional[{expr}]" if nullable else expr

    def _markers(self, schema: dict[str, Any]) -> list[str]:
        out: list[str] = []
        if "minimum" in schema:
            exclusive = ", exclusive=True" if schema.pop("exclusiveMinimum", False) else ""
            out.append(f"crd.Minimum({schema.pop('minimum')!r}{exclusive})")
        if "maximum" in schema:
            exclusive = ", exclusive=True" if schema.pop("exclusiveMaximum", False) else ""
            out.append(f"crd.Maximum({schema.pop('maximum')!r}{exclusive})")
        for key, marker in _VALUE_MARKERS.items():
            if key in schema:
                out.append(f"crd.{marker}({schema.pop(key)!r})")
        for key, marker in _FLAG_MARKERS.items():
            if schema.get(key) is True:
                schema.pop(key)
                out.append(f"crd.{marker}()")
        if "enum" in schema:
            out.append(f"crd.Enum({', '.join(repr(v) for v in schema.pop('enum'))})")
        if "x-kubernetes-list-type" in schema:
            out.append(f"crd.ListType({schema.pop('x-kubernetes-list-type')!r})")
        if "x-kubernetes-list-map-keys" in schema:
            out.append(
                f"crd.ListMapKeys({', '.join(repr(k) for k in schema.pop('x-kubernetes-list-map-keys'))})"
            )
        if "x-kubernetes-map-type" in schema:
            out.append(f"crd.MapType({schema.pop('x-kubernetes-map-type')!r})")
        for rule in schema.pop("x-kubernetes-validations", None) or ():
            out.append(_rule(rule))
        if "description" in schema:
            out.append(f"crd.Description({schema.pop('description')!r})")
        if schema:
            out.append(f"crd.Keywords({schema!r})")
        return out

    # -- classes ---------------------------------------------------------------------------
    def typed_dict(
        self,
        hint: str,
        schema: Mapping[str, Any],
        path: str,
        *,
        doc: str | None = None,
        head: Sequence[tuple[str, str, bool]] = (),
        skip: Sequence[str] = (),
    ) -> str:
        """Emit a TypedDict for an object schema; ``head`` are (key, type, required) fields put first."""
        name = self.unique(hint)
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        rows: list[tuple[str, str, bool, str | None]] = [(k, t, r, None) for k, t, r in head]
        for key, sub in properties.items():
            if key in skip:
                continue
            description = sub.get("description") if isinstance(sub, Mapping) and self.docs else None
            text = self.type_expr(sub, name + pascal(key), f"{path}.{key}", describe=False)
            rows.append((key, text, key in required, description))
        self.blocks.append(self._class_source(name, rows, doc if self.docs else None))
        return name

    def _class_source(
        self, name: str, rows: list[tuple[str, str, bool, str | None]], doc: str | None
    ) -> str:
        identifiers = all(k.isidentifier() and not keyword.iskeyword(k) for k, *_ in rows)
        if not identifiers:
            fields = []
            for key, text, required, description in rows:
                if description and self.markers:
                    text = _annotate(text, f"crd.Description({description!r})")
                fields.append(f"    {key!r}: {text if required else f'NotRequired[{text}]'},")
            return f"{name} = TypedDict({name!r}, {{\n" + "\n".join(fields) + "\n})"
        lines = [f"class {name}(TypedDict):"]
        docstring = _docstring(doc, "    ") if doc else None
        if docstring:
            lines.append(docstring)
        for key, text, required, description in rows:
            field_doc = _docstring(description, "    ") if description else None
            if description and not field_doc and self.markers:
                text = _annotate(text, f"crd.Description({description!r})")
            lines.append(f"    {key}: {text if required else f'NotRequired[{text}]'}")
            if field_doc:
                lines.append(field_doc)
        if len(lines) == 1 or (len(lines) == 2 and docstring):
            lines.append("    pass")
        return "\n".join(lines)


def _annotate(text: str, marker: str) -> str:
    """``text`` with one more marker (inside Optional, merged into an Annotated)."""
    if text.startswith("Optional[") and text.endswith("]"):
        return f"Optional[{_annotate(text[9:-1], marker)}]"
    if text.startswith("Annotated[") and text.endswith("]"):
        return text[:-1] + f", {marker}]"
    return f"Annotated[{text}, {marker}]"


def _literal_enum(values: Any, kind: str) -> bool:
    if not isinstance(values, list) or not values:
        return False
    allowed = _LITERAL_TYPES[kind]
    return all(
        isinstance(v, allowed) and (kind == "boolean" or not isinstance(v, bool)) for v in values
    )


def _quantity_pattern() -> str:
    from pyinformers.crd._markers import QUANTITY_PATTERN

    return QUANTITY_PATTERN


def _rule(rule: Mapping[str, Any]) -> str:
    args = [repr(rule.get("rule"))]
    for key, arg in (
        ("message", "message"),
        ("messageExpression", "message_expression"),
        ("fieldPath", "field_path"),
        ("reason", "reason"),
        ("optionalOldSelf", "optional_old_self"),
    ):
        if key in rule:
            args.append(f"{arg}={rule[key]!r}")
    return f"crd.Rule({', '.join(args)})"


# -- CRD -> module ------------------------------------------------------------------------------
def types_module(crd: Mapping[str, Any], *, command: str = "") -> str:
    """The source of a Python module typing the objects of ``crd`` (any CustomResourceDefinition).

    One TypedDict per object of each version's schema (the storage
    version's with plain names, ``Certificate``, ``CertificateSpec`` ...;
    another version's suffixed, ``CertificateV1beta1Spec``), the
    ``CustomResource`` that regenerates ``crd`` (named ``<KIND>_CRD``) and a
    ``Resource`` per served version (``CERTIFICATES``,
    ``CERTIFICATES_V1BETA1``). ``command`` goes into the module docstring as
    how to regenerate it. A schema that is not structural raises a one-line
    :class:`SchemaError` naming the version and the path.
    """
    if not isinstance(crd, Mapping) or crd.get("kind") != "CustomResourceDefinition":
        raise SchemaError(
            f"not a CustomResourceDefinition (kind is {crd.get('kind')!r})"
            if isinstance(crd, Mapping)
            else "a CRD must be a mapping"
        )
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind, group = names.get("kind"), spec.get("group")
    if not isinstance(kind, str) or not kind or not isinstance(group, str) or not group:
        raise SchemaError("CRD: spec.group and spec.names.kind are required")
    crd_name = (crd.get("metadata") or {}).get("name") or f"{names.get('plural')}.{group}"
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    served = [v for v in versions if v.get("served", True)]
    if not served:
        raise SchemaError(f"CRD {crd_name}: no served version")
    storage = next((v["name"] for v in versions if v.get("storage")), served[0]["name"])
    writer = ModuleWriter()
    roots: list[tuple[Mapping[str, Any], str, list[str]]] = []
    for version in versions:
        writer.where = f"CRD {crd_name} version {version.get('name')}"
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or (
            spec.get("validation") or {}
        ).get("openAPIV3Schema")
        if not isinstance(schema, Mapping):
            raise SchemaError(
                f"{writer.where}: no schema.openAPIV3Schema (a CRD needs a structural schema)"
            )
        if schema.get("type") != "object":
            raise SchemaError(
                f"{writer.where}: not a structural schema: the root must be type: object"
            )
        suffix = "" if version["name"] == storage else pascal(version["name"])
        root = dict(schema)
        root.pop("type")
        description = root.pop("description", None)
        properties = root.pop("properties", {}) or {}
        required = root.pop("required", [])
        head = [
            ("apiVersion", "str", True),
            ("kind", "str", True),
            ("metadata", "k8s.ObjectMeta", True),
        ]
        name = writer.typed_dict(
            kind + suffix,
            {"properties": properties, "required": required},
            "",
            doc=description,
            head=head,
            skip=ROOT_FIELDS,
        )
        rules = root.pop("x-kubernetes-validations", None) or []
        if root:
            raise SchemaError(
                f"{writer.where}: root keywords {sorted(root)} have no Python form "
                "(put them on spec or status)"
            )
        roots.append((version, name, [_rule(rule) for rule in rules]))
    return _module_source(crd, crd_name, kind, group, names, spec, roots, storage, writer, command)


def _module_source(
    crd: Mapping[str, Any],
    crd_name: str,
    kind: str,
    group: str,
    names: Mapping[str, Any],
    spec: Mapping[str, Any],
    roots: list[tuple[Mapping[str, Any], str, list[str]]],
    storage: str,
    writer: ModuleWriter,
    command: str,
) -> str:
    definition = writer.unique(upper_snake(kind) + "_CRD")
    lines = [f'"""Types of the custom resource {crd_name} (kind {kind}).', ""]
    if command:
        lines += [f"Generated by: {command}", "Do not edit: regenerate with that command."]
    else:
        lines += ["Generated by pyinformers.crd.types_module; regenerate rather than edit."]
    lines += [
        '"""',
        "",
        "from typing import Any, Literal, Optional, Union",
        "",
        "from typing_extensions import Annotated, NotRequired, TypedDict",
        "",
        "from pyinformers import crd, k8s",
        "from pyinformers.api import Resource",
        "",
        "",
    ]
    body = "\n\n\n".join(writer.blocks)
    versions = []
    for version, root, rules in roots:
        args = [repr(version["name"]), root]
        args.append(f"served={bool(version.get('served', True))!r}")
        args.append(f"storage={version['name'] == storage!r}")
        subresources = version.get("subresources") or {}
        args.append(f"status={'status' in subresources!r}")
        scale = subresources.get("scale")
        if scale:
            scale_args = [
                repr(scale.get("specReplicasPath")),
                repr(scale.get("statusReplicasPath")),
            ]
            if scale.get("labelSelectorPath"):
                scale_args.append(repr(scale["labelSelectorPath"]))
            args.append(f"scale=crd.Scale({', '.join(scale_args)})")
        columns = []
        for column in version.get("additionalPrinterColumns") or ():
            col = [
                repr(column.get("name")),
                repr(column.get("jsonPath")),
                f"type={column.get('type')!r}",
            ]
            for key, arg in (
                ("format", "format"),
                ("description", "description"),
                ("priority", "priority"),
            ):
                if column.get(key):
                    col.append(f"{arg}={column[key]!r}")
            columns.append(f"            crd.PrinterColumn({', '.join(col)}),")
        if columns:
            args.append("printer_columns=[\n" + "\n".join(columns) + "\n        ]")
        if version.get("deprecated"):
            args.append("deprecated=True")
            if version.get("deprecationWarning"):
                args.append(f"deprecation_warning={version['deprecationWarning']!r}")
        fields = [
            f["jsonPath"] for f in version.get("selectableFields") or () if isinstance(f, Mapping)
        ]
        if fields:
            args.append(f"selectable_fields={fields!r}")
        if rules:
            args.append(f"rules=[{', '.join(rules)}]")
        versions.append(f"        crd.Version({', '.join(args)}),")
    cr = [
        f"{definition} = crd.CustomResource(",
        f"    group={group!r},",
        f"    kind={kind!r},",
        "    versions=[",
        *versions,
        "    ],",
    ]
    for key, arg in (("plural", "plural"), ("singular", "singular"), ("listKind", "list_kind")):
        if names.get(key):
            cr.append(f"    {arg}={names[key]!r},")
    for key, arg in (("shortNames", "short_names"), ("categories", "categories")):
        if names.get(key):
            cr.append(f"    {arg}={list(names[key])!r},")
    cr.append(f"    scope={spec.get('scope', 'Namespaced')!r},")
    approved = ((crd.get("metadata") or {}).get("annotations") or {}).get(
        "api-approved.kubernetes.io"
    )
    if approved:
        cr.append(f"    annotations={{'api-approved.kubernetes.io': {approved!r}}},")
    cr.append(")")
    resources, exported = [], [definition]
    plural = upper_snake(str(names.get("plural") or kind))
    for version, root, _ in roots:
        if not version.get("served", True):
            continue
        const = writer.unique(
            plural if version["name"] == storage else f"{plural}_{upper_snake(version['name'])}"
        )
        resources.append(
            f'{const}: "Resource[{root}]" = {definition}.resource({version["name"]!r})'
        )
        exported.append(const)
    exported += [root for _, root, _ in roots]
    tail = ["", "", *cr, "", *resources, "", f"__all__ = {sorted(set(exported))!r}", ""]
    return "\n".join(lines) + body + "\n" + "\n".join(tail)
