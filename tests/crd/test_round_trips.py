"""Round trips on random structural schemas: CRD -> types -> CRD is the identity, and so is types -> CRD -> types."""

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyinformers import crd
from pyinformers.crd._codegen import types_module
from tests.support.crd_modules import load_module, normalized

_names = st.from_regex(r"[a-z][a-zA-Z0-9]{0,7}", fullmatch=True)
_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from("\n\"'\\ "),
    min_size=1,
    max_size=30,
)


@st.composite
def _decorated(draw: Any, base: dict[str, Any]) -> dict[str, Any]:
    if draw(st.booleans()):
        base["description"] = draw(_text)
    if draw(st.integers(0, 5)) == 0:
        base["nullable"] = True
    return base


@st.composite
def _string(draw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string"}
    if draw(st.booleans()):
        out["enum"] = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
        if draw(st.booleans()):
            out["default"] = draw(st.sampled_from(out["enum"]))
    else:
        for key, strategy in (
            ("minLength", st.integers(0, 5)),
            ("maxLength", st.integers(5, 64)),
            ("pattern", st.sampled_from(["^[a-z]+$", "^\\d{2}$"])),
            ("format", st.sampled_from(["date-time", "byte", "uri"])),
            ("default", _names),
        ):
            if draw(st.integers(0, 3)) == 0:
                out[key] = draw(strategy)
    return out


@st.composite
def _integer(draw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": draw(st.sampled_from(["integer", "number"]))}
    if draw(st.booleans()):
        out["minimum"] = draw(st.integers(-5, 5))
        if draw(st.booleans()):
            out["exclusiveMinimum"] = True
    if draw(st.booleans()):
        out["maximum"] = draw(st.integers(10, 100))
    if out["type"] == "integer" and draw(st.booleans()):
        out["format"] = draw(st.sampled_from(["int32", "int64"]))
    if draw(st.integers(0, 3)) == 0:
        out["default"] = 7
    return out


_leaf = st.one_of(
    _string(),
    _integer(),
    st.just({"type": "boolean"}),
    st.just(
        {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    ),
    st.just({"x-kubernetes-preserve-unknown-fields": True}),
    st.just({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
).flatmap(_decorated)


def _containers(children: Any) -> Any:
    @st.composite
    def array(draw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": draw(children)}
        if draw(st.booleans()):
            out["maxItems"] = draw(st.integers(1, 10))
        if draw(st.integers(0, 3)) == 0:
            out["x-kubernetes-list-type"] = "atomic"
        return out

    @st.composite
    def obj(draw: Any) -> dict[str, Any]:
        properties = draw(st.dictionaries(_names, children, min_size=0, max_size=4))
        out: dict[str, Any] = {"type": "object"}
        if properties:
            out["properties"] = properties
            required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
            if required:
                out["required"] = sorted(required)
        if draw(st.integers(0, 3)) == 0:
            out["x-kubernetes-validations"] = [{"rule": "self == self", "message": draw(_text)}]
        return out

    @st.composite
    def mapping(draw: Any) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": draw(children)}

    return st.one_of(array(), obj(), mapping()).flatmap(_decorated)


_schemas = st.recursive(_leaf, _containers, max_leaves=8)


@st.composite
def _crds(draw: Any) -> dict[str, Any]:
    spec = draw(st.dictionaries(_names, _schemas, min_size=1, max_size=4))
    root: dict[str, Any] = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": spec}},
    }
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root},
    }
    if draw(st.booleans()):
        root["properties"]["status"] = {
            "type": "object",
            "properties": {"count": {"type": "integer"}},
        }
        version["subresources"] = {"status": {}}
        version["additionalPrinterColumns"] = [
            {"name": "Count", "type": "integer", "jsonPath": ".status.count"}
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": draw(st.sampled_from(["Namespaced", "Cluster"])),
            "names": {
                "kind": "Widget",
                "plural": "widgets",
                "singular": "widget",
                "listKind": "WidgetList",
            },
            "versions": [version],
        },
    }


def _custom_resource(source: str) -> crd.CustomResource:
    module = load_module(source)
    (resource,) = [v for v in vars(module).values() if isinstance(v, crd.CustomResource)]
    return resource


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_crds())
def test_crd_to_types_to_crd_gives_the_crd_back(definition: dict[str, Any]) -> None:
    assert normalized(_custom_resource(types_module(definition)).definition()) == normalized(
        definition
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_crds())
def test_types_to_crd_to_types_gives_the_same_module(definition: dict[str, Any]) -> None:
    first = types_module(definition)
    again = types_module(_custom_resource(first).definition())
    assert again == first
