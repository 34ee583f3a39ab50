"""The ``typing.Annotated`` markers: what controller-gen's ``+kubebuilder`` markers say, as values.

A marker is a small frozen dataclass placed in ``Annotated[T, ...]``; the
schema builder (:mod:`pyinformers.crd._schema`) turns each into the OpenAPI
keyword it stands for, after checking that it fits the type it annotates (a
``MinLength`` on an ``int`` is an error naming the field, not a schema the
API server would refuse later). Markers hold no state and are safe to share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

__all__ = [
    "Marker",
    "Minimum",
    "Maximum",
    "MultipleOf",
    "MinLength",
    "MaxLength",
    "Pattern",
    "Format",
    "MinItems",
    "MaxItems",
    "UniqueItems",
    "MinProperties",
    "MaxProperties",
    "Enum",
    "Default",
    "Description",
    "Title",
    "Example",
    "Nullable",
    "ListType",
    "ListMapKeys",
    "MapType",
    "PreserveUnknownFields",
    "EmbeddedResource",
    "Rule",
    "Schemaless",
    "Keywords",
    "IntOrString",
    "Quantity",
    "Time",
    "MicroTime",
]

Number = int | float


class Marker:
    """Base of every marker: ``applies_to`` names the schema types it may annotate (None: any)."""

    applies_to: frozenset[str] | None = None

    @property
    def marker_name(self) -> str:
        """The marker's name in error messages: its class's (``MinLength``)."""
        return type(self).__name__.lstrip("_").replace("Marker", "")

    def apply(self, schema: dict[str, Any]) -> None:  # pragma: no cover - every marker overrides it
        raise NotImplementedError


_NUMERIC = frozenset({"integer", "number"})
_STRING = frozenset({"string"})
_ARRAY = frozenset({"array"})
_OBJECT = frozenset({"object"})


@dataclass(frozen=True)
class Minimum(Marker):
    """``+kubebuilder:validation:Minimum`` (with ``exclusive=True``, ExclusiveMinimum)."""

    value: Number
    exclusive: bool = False
    applies_to = _NUMERIC

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minimum"] = self.value
        if self.exclusive:
            schema["exclusiveMinimum"] = True


@dataclass(frozen=True)
class Maximum(Marker):
    """``+kubebuilder:validation:Maximum`` (with ``exclusive=True``, ExclusiveMaximum)."""

    value: Number
    exclusive: bool = False
    applies_to = _NUMERIC

    def apply(self, schema: dict[str, Any]) -> None:
        schema["maximum"] = self.value
        if self.exclusive:
            schema["exclusiveMaximum"] = True


@dataclass(frozen=True)
class _Keyword(Marker):
    """A marker that sets one OpenAPI keyword to its value."""

    value: Any
    keyword = ""

    def apply(self, schema: dict[str, Any]) -> None:
        schema[self.keyword] = self.value


class MultipleOf(_Keyword):
    """``+kubebuilder:validation:MultipleOf``."""

    applies_to = _NUMERIC
    keyword = "multipleOf"


class MinLength(_Keyword):
    """``+kubebuilder:validation:MinLength``."""

    applies_to = _STRING
    keyword = "minLength"


class MaxLength(_Keyword):
    """``+kubebuilder:validation:MaxLength``."""

    applies_to = _STRING
    keyword = "maxLength"


class Pattern(_Keyword):
    """``+kubebuilder:validation:Pattern`` (an ECMA-262 regular expression)."""

    applies_to = _STRING
    keyword = "pattern"


class Format(_Keyword):
    """``+kubebuilder:validation:Format`` (``date-time``, ``int32``, ``byte``, ``uri`` ...)."""

    keyword = "format"


class MinItems(_Keyword):
    """``+kubebuilder:validation:MinItems``."""

    applies_to = _ARRAY
    keyword = "minItems"


class MaxItems(_Keyword):
    """``+kubebuilder:validation:MaxItems``."""

    applies_to = _ARRAY
    keyword = "maxItems"


class MinProperties(_Keyword):
    """``+kubebuilder:validation:MinProperties``."""

    applies_to = _OBJECT
    keyword = "minProperties"


class MaxProperties(_Keyword):
    """``+kubebuilder:validation:MaxProperties``."""

    applies_to = _OBJECT
    keyword = "maxProperties"


class Default(_Keyword):
    """``+kubebuilder:default`` (the server applies it on read and write)."""

    keyword = "default"


class Description(_Keyword):
    """The field's description (also taken from a docstring or ``#:`` comment)."""

    keyword = "description"


class Title(_Keyword):
    """``+kubebuilder:title``."""

    keyword = "title"


class Example(_Keyword):
    """``+kubebuilder:example``."""

    keyword = "example"


@dataclass(frozen=True)
class Enum(Marker):
    """``+kubebuilder:validation:Enum`` for values a ``Literal`` cannot spell (prefer ``Literal``)."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", tuple(values))

    def apply(self, schema: dict[str, Any]) -> None:
        schema["enum"] = list(self.values)


@dataclass(frozen=True)
class _Flag(Marker):
    """A marker that sets one extension to ``True``."""

    keyword = ""

    def apply(self, schema: dict[str, Any]) -> None:
        schema[self.keyword] = True


class UniqueItems(_Flag):
    """``+kubebuilder:validation:UniqueItems`` (CRDs refuse it: use ``ListType("set")``)."""

    applies_to = _ARRAY
    keyword = "uniqueItems"


class Nullable(_Flag):
    """``+nullable``: ``null`` is a value (``T | None`` says the same)."""

    keyword = "nullable"


class PreserveUnknownFields(_Flag):
    """``+kubebuilder:pruning:PreserveUnknownFields``: fields the schema does not name are kept."""

    keyword = "x-kubernetes-preserve-unknown-fields"


class EmbeddedResource(_Flag):
    """``+kubebuilder:validation:EmbeddedResource``: an object with its own apiVersion, kind, metadata."""

    applies_to = _OBJECT
    keyword = "x-kubernetes-embedded-resource"


@dataclass(frozen=True)
class ListType(Marker):
    """``+listType``: ``"atomic"``, ``"set"`` or ``"map"`` (the last with :class:`ListMapKeys`)."""

    value: Literal["atomic", "set", "map"]
    applies_to = _ARRAY

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-list-type"] = self.value


@dataclass(frozen=True)
class ListMapKeys(Marker):
    """``+listMapKey``: the keys that identify an item of a ``ListType("map")`` list."""

    keys: tuple[str, ...]
    applies_to = _ARRAY

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", tuple(keys))

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-list-map-keys"] = list(self.keys)


@dataclass(frozen=True)
class MapType(Marker):
    """``+mapType``: ``"atomic"`` or ``"granular"``."""

    value: Literal["atomic", "granular"]
    applies_to = _OBJECT

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-map-type"] = self.value


@dataclass(frozen=True)
class Rule(Marker):
    """``+kubebuilder:validation:XValidation``: a CEL rule the server evaluates on every write.

    ``rule`` sees the value as ``self`` (and the previous one as ``oldSelf``
    in a transition rule); ``message`` or ``message_expression`` is what the
    client reads when it fails; ``field_path`` points the error at a field
    below (``".spec.replicas"``); ``reason`` is one of FieldValueInvalid,
    FieldValueForbidden, FieldValueRequired, FieldValueDuplicate.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    field_path: str | None = None
    reason: str | None = None
    optional_old_self: bool | None = None

    def apply(self, schema: dict[str, Any]) -> None:
        schema.setdefault("x-kubernetes-validations", []).append(self.to_json())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        for key, value in (
            ("message", self.message),
            ("messageExpression", self.message_expression),
            ("fieldPath", self.field_path),
            ("reason", self.reason),
            ("optionalOldSelf", self.optional_old_self),
        ):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Rule:
        return cls(
            value["rule"],
            message=value.get("message"),
            message_expression=value.get("messageExpression"),
            field_path=value.get("fieldPath"),
            reason=value.get("reason"),
            optional_old_self=value.get("optionalOldSelf"),
        )


@dataclass(frozen=True)
class Schemaless(Marker):
    """``+kubebuilder:validation:Schemaless``: this exact schema, no type walked (the escape hatch)."""

    schema: Mapping[str, Any]

    def apply(self, schema: dict[str, Any]) -> None:
        schema.clear()
        schema.update(self.schema)


@dataclass(frozen=True)
class Keywords(Marker):
    """OpenAPI keywords added verbatim (``oneOf``, ``not`` ... that no other marker spells)."""

    keywords: Mapping[str, Any]

    def apply(self, schema: dict[str, Any]) -> None:
        schema.update(self.keywords)


class _IntOrStringMarker(Marker):
    """The marker behind :data:`IntOrString`."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.pop("type", None)
        schema.update(
            {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
        )

    def __repr__(self) -> str:
        return "INT_OR_STRING"


class _QuantityMarker(Marker):
    """The marker behind :data:`Quantity`: a resource quantity (``"500m"``, ``"1Gi"``, ``2``)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.pop("type", None)
        schema.update(
            {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": QUANTITY_PATTERN,
                "x-kubernetes-int-or-string": True,
            }
        )

    def __repr__(self) -> str:
        return "QUANTITY"


INT_OR_STRING = _IntOrStringMarker()
QUANTITY = _QuantityMarker()

#: The grammar of a Kubernetes resource quantity: a signed decimal number and an
#: optional binary (Ki..Ei), decimal (n, u, m, k, M..E) or exponent suffix.
QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"

#: ``intstr.IntOrString``: an int or a string (``x-kubernetes-int-or-string``).
IntOrString = Annotated[int | str, INT_OR_STRING]
#: ``resource.Quantity``: the server answers a string; an int is accepted on write.
Quantity = Annotated[int | str, QUANTITY]
#: ``metav1.Time``: an RFC 3339 date-time string.
Time = Annotated[str, Format("date-time")]
#: ``metav1.MicroTime``: an RFC 3339 date-time string with microseconds.
MicroTime = Annotated[str, Format("date-time")]
