"""Python types to structural OpenAPI v3 schemas (what controller-gen does from Go types).

:func:`object_schema` walks a ``TypedDict`` (the primary form) or a
dataclass: each key becomes a property, keys that are not ``NotRequired`` are
``required``, ``Annotated`` markers (:mod:`pyinformers.crd._markers`) add
validation, docstrings become descriptions. Built-in Kubernetes types (the
classes of :mod:`pyinformers.crd.k8s`, found through their module's
``__openapi_definitions__``) contribute the API server's own schema,
converted by :mod:`pyinformers.crd._openapi`.

The result is always structural (every node has a ``type``, or is
int-or-string / preserve-unknown), or the walk fails with a
:class:`SchemaError`: one line naming the type, the field and the marker.
Pure functions over types; safe from any thread.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import textwrap
import types
import typing
from collections import abc
from collections.abc import Mapping
from typing import Any, Union

import typing_extensions

from pyinformers.crd._markers import INT_OR_STRING, Marker

__all__ = ["SchemaError", "object_schema", "type_schema", "ROOT_FIELDS"]

#: The root fields the API server owns: never in a CRD's schema (controller-gen writes
#: ``{type: string}`` and ``{type: object}`` for them, which constrain nothing).
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


class SchemaError(ValueError):
    """A type cannot become a CRD schema; the message is one line naming type, field and marker."""


_NONE = type(None)
_REQUIRED = {typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.ReadOnly}
for _wrapper in ("Required", "NotRequired", "ReadOnly"):
    if hasattr(typing, _wrapper):
        _REQUIRED.add(getattr(typing, _wrapper))
_NOT_REQUIRED = {
    typing_extensions.NotRequired,
    getattr(typing, "NotRequired", typing_extensions.NotRequired),
}
_READ_ONLY = {typing_extensions.ReadOnly, getattr(typing, "ReadOnly", typing_extensions.ReadOnly)}
_LITERALS = {typing.Literal, typing_extensions.Literal}
_UNIONS: set[Any] = {typing.Union, types.UnionType}
_LISTS: set[Any] = {
    list,
    list,
    typing.Sequence,
    typing.MutableSequence,
    abc.Sequence,
    abc.MutableSequence,
}
_MAPS: set[Any] = {
    dict,
    dict,
    typing.Mapping,
    typing.MutableMapping,
    abc.Mapping,
    abc.MutableMapping,
}
_SCALARS: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _name(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or getattr(tp, "__name__", None) or repr(tp)


def type_schema(tp: Any, *, where: str = "") -> dict[str, Any]:
    """The schema of one type (``int``, ``list[Foo]``, ``Annotated[str, MinLength(1)]`` ...)."""
    return _Walker().schema(tp, where or _name(tp))


def object_schema(cls: Any, *, root: bool = False) -> dict[str, Any]:
    """The schema of a TypedDict or dataclass; ``root`` leaves out apiVersion, kind and metadata."""
    return _Walker().object(cls, root=root)


class _Walker:
    """One walk: ``stack`` holds the classes being expanded, to name a cycle instead of recursing."""

    def __init__(self) -> None:
        self.stack: list[Any] = []

    # -- types -----------------------------------------------------------------------------
    def schema(self, tp: Any, where: str) -> dict[str, Any]:
        origin = typing_extensions.get_origin(tp)
        if origin in _REQUIRED:
            return self.schema(typing_extensions.get_args(tp)[0], where)
        if origin is typing_extensions.Annotated or origin is typing.Annotated:
            base, *metadata = typing_extensions.get_args(tp)
            named = [m for m in metadata if _is_definition(m)]
            if named:
                from pyinformers.crd._openapi import builtin_schema

                schema = builtin_schema(named[0].name)
            else:
                schema = self.schema(base, where)
            for marker in metadata:
                if _is_definition(marker):
                    continue
                self.mark(schema, marker, where)
            return schema
        if tp is Any:
            return {"x-kubernetes-preserve-unknown-fields": True}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if origin in _LITERALS:
            return self.literal(typing_extensions.get_args(tp), where)
        if origin in _UNIONS:
            return self.union(typing_extensions.get_args(tp), where)
        if tp in _LISTS or origin in _LISTS:
            args = typing_extensions.get_args(tp)
            return {"type": "array", "items": self.schema(args[0] if args else Any, f"{where}[]")}
        if tp in _MAPS or origin in _MAPS:
            args = typing_extensions.get_args(tp)
            if not args or args[1] is Any:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            if args[0] is not str:
                raise SchemaError(f"{where}: map keys must be str, not {_name(args[0])}")
            return {"type": "object", "additionalProperties": self.schema(args[1], f"{where}{{}}")}
        if isinstance(tp, type) and (
            typing_extensions.is_typeddict(tp) or dataclasses.is_dataclass(tp)
        ):
            return self.object(tp, root=False)
        if tp is _NONE:
            raise SchemaError(
                f"{where}: None alone is not a schema (use Optional[T] for a nullable T)"
            )
        if isinstance(tp, (str, typing.ForwardRef)):
            raise SchemaError(f"{where}: unresolved annotation {tp!r}")
        raise SchemaError(
            f"{where}: unsupported type {_name(tp)} (str, int, float, bool, Literal, list, dict, "
            "TypedDict, dataclass, Any, or Optional/Annotated of them)"
        )

    def literal(self, values: tuple[Any, ...], where: str) -> dict[str, Any]:
        kinds = {_literal_type(v) for v in values}
        if None in kinds:
            bad = next(v for v in values if _literal_type(v) is None)
            raise SchemaError(f"{where}: Literal value {bad!r} is not a str, int or bool")
        if len(kinds) > 1:
            raise SchemaError(
                f"{where}: Literal mixes types ({', '.join(sorted(str(k) for k in kinds))}): "
                f"{', '.join(repr(v) for v in values)}"
            )
        return {"type": kinds.pop(), "enum": list(values)}

    def union(self, args: tuple[Any, ...], where: str) -> dict[str, Any]:
        rest = [a for a in args if a is not _NONE]
        if len(rest) < len(args):
            inner = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007 -- built at run time
            nullable = self.schema(inner, where)
            nullable["nullable"] = True
            return nullable
        if set(rest) == {int, str}:
            schema: dict[str, Any] = {}
            INT_OR_STRING.apply(schema)
            return schema
        names = " | ".join(_name(a) for a in rest)
        raise SchemaError(
            f"{where}: Union[{names}] is not a structural schema (only int | str, or T | None)"
        )

    def mark(self, schema: dict[str, Any], marker: Any, where: str) -> None:
        if not isinstance(marker, Marker):
            raise SchemaError(
                f"{where}: unsupported annotation {marker!r} (use the markers of pyinformers.crd)"
            )
        kind = schema.get("type")
        if marker.applies_to is not None and kind is not None and kind not in marker.applies_to:
            raise SchemaError(
                f"{where}: marker {marker.marker_name} does not apply to {_a(kind)} "
                f"(only {', '.join(sorted(marker.applies_to))})"
            )
        marker.apply(schema)
        if "default" in schema and getattr(marker, "keyword", None) == "default":
            _check_value(schema, schema["default"], f"{where}: marker Default")
        if "enum" in schema and marker.marker_name == "Enum":
            for value in schema["enum"]:
                _check_value(
                    {k: v for k, v in schema.items() if k != "enum"}, value, f"{where}: marker Enum"
                )

    # -- objects ---------------------------------------------------------------------------
    def object(self, cls: Any, *, root: bool) -> dict[str, Any]:
        definition = _builtin_definition(cls)
        if definition is not None:
            from pyinformers.crd._openapi import builtin_schema

            return builtin_schema(definition)
        name = _name(cls)
        if cls in self.stack:
            cycle = " -> ".join(_name(c) for c in self.stack[self.stack.index(cls) :] + [cls])
            raise SchemaError(
                f"{name}: cycle in the types ({cycle}): a CRD schema cannot be recursive"
            )
        self.stack.append(cls)
        try:
            try:
                hints = typing_extensions.get_type_hints(cls, include_extras=True)
            except Exception as error:  # NameError for a name the module does not define, mostly
                raise SchemaError(f"{name}: cannot resolve its annotations: {error}") from None
            docs = _field_docs(cls)
            if dataclasses.is_dataclass(cls):
                fields = {f.name: f for f in dataclasses.fields(cls)}
                required = [
                    n
                    for n, f in fields.items()
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                ]
                hints = {n: hints[n] for n in fields}
            else:
                fields = {}
                required = [n for n in hints if _required(n, hints[n], cls)]
            properties: dict[str, Any] = {}
            for key, hint in hints.items():
                if root and key in ROOT_FIELDS:
                    continue
                schema = self.schema(hint, f"{name}.{key}")
                field = fields.get(key)
                if field is not None and field.default not in (dataclasses.MISSING, None):
                    schema.setdefault("default", field.default)
                if key in docs:
                    schema["description"] = docs[key]
                elif "description" not in schema:
                    doc = _class_doc(_field_class(hint))
                    if doc:
                        schema["description"] = doc
                properties[key] = schema
        finally:
            self.stack.pop()
        out: dict[str, Any] = {}
        if root:
            doc = _class_doc(cls)
            if doc:
                out["description"] = doc
        out["type"] = "object"
        if properties:
            out["properties"] = properties
        required = [k for k in required if k in properties]
        if required:
            out["required"] = required
        return out


def _required(key: str, hint: Any, cls: Any) -> bool:
    """Whether a TypedDict key is required: its own ``Required``/``NotRequired`` wins over
    ``__required_keys__``, which is wrong for a class under ``from __future__ import annotations``
    (the wrappers are strings when the class is made)."""
    origin = typing_extensions.get_origin(hint)
    if origin in _NOT_REQUIRED:
        return False
    if origin in _REQUIRED and origin not in _READ_ONLY:
        return True
    return key in cls.__required_keys__


def _a(kind: str) -> str:
    """``"an integer"``, ``"a string"``."""
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _literal_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    return None


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict, Mapping),
}


def _check_value(schema: Mapping[str, Any], value: Any, where: str) -> None:
    """A marker's value (default, enum member) must be of the schema's type: else a one-line error."""
    kind = schema.get("type")
    if value is None and schema.get("nullable"):
        return
    if kind is None:
        if schema.get("x-kubernetes-int-or-string") and (
            isinstance(value, bool) or not isinstance(value, (int, str))
        ):
            raise SchemaError(f"{where}: {value!r} is not an int or a string")
        return
    ok = isinstance(value, _JSON_TYPES[kind]) and not (
        kind in ("integer", "number") and isinstance(value, bool)
    )
    if not ok:
        raise SchemaError(f"{where}: {value!r} is not {_a(kind)}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(f"{where}: {value!r} is not one of {schema['enum']!r}")


def _is_definition(marker: Any) -> bool:
    """An ``OpenAPIDefinition`` of :mod:`pyinformers.k8s` (an alias such as ``k8s.Quantity``)."""
    kind = type(marker)
    return kind.__name__ == "OpenAPIDefinition" and kind.__module__ == "pyinformers.k8s"


def _builtin_definition(cls: Any) -> str | None:
    module = sys.modules.get(getattr(cls, "__module__", ""), None)
    definitions = getattr(module, "__openapi_definitions__", None)
    if isinstance(definitions, Mapping):
        found = definitions.get(getattr(cls, "__name__", ""))
        if found is not None and getattr(module, getattr(cls, "__name__", ""), None) is cls:
            return str(found)
    return None


def _field_class(hint: Any) -> Any:
    """The TypedDict/dataclass a field's type names, through Annotated, NotRequired and Optional."""
    while True:
        origin = typing_extensions.get_origin(hint)
        if (
            origin in _REQUIRED
            or origin is typing_extensions.Annotated
            or origin is typing.Annotated
        ):
            hint = typing_extensions.get_args(hint)[0]
        elif origin in _UNIONS:
            rest = [a for a in typing_extensions.get_args(hint) if a is not _NONE]
            if len(rest) != 1:
                return None
            hint = rest[0]
        else:
            return hint


def _class_doc(cls: Any) -> str | None:
    """A class's own docstring, cleaned; None for a dataclass's generated signature or builtins."""
    if not isinstance(cls, type) or not (
        typing_extensions.is_typeddict(cls) or dataclasses.is_dataclass(cls)
    ):
        return None
    if _builtin_definition(cls) is not None:
        return None
    doc = cls.__dict__.get("__doc__")
    if not doc:
        return None
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        return None
    return inspect.cleandoc(doc)


def _field_docs(cls: Any) -> dict[str, str]:
    """Descriptions of a class's fields (its bases' first): a string right after the field, or ``#:`` lines above."""
    docs: dict[str, str] = {}
    for base in getattr(cls, "__orig_bases__", ()):
        if isinstance(base, type) and base is not cls and typing_extensions.is_typeddict(base):
            docs.update(_field_docs(base))
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return docs
    lines = source.splitlines()
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for index, node in enumerate(body):
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        key = node.target.id
        after = body[index + 1] if index + 1 < len(body) else None
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[key] = inspect.cleandoc(after.value.value)
            continue
        comment: list[str] = []
        line = node.lineno - 2
        while line >= 0 and lines[line].strip().startswith("#:"):
            comment.insert(0, lines[line].strip()[2:].strip())
            line -= 1
        if comment:
            docs[key] = "\n".join(comment)
    return docs
