"""The structural-schema walk and the CEL rules: invariants over any schema and any object.

The exact answers are held to a real kube-apiserver in
tests/k8s/test_crd_structural.py; here hypothesis checks what must hold for
every input: a write's result is a fixed point (checking it again prunes and
defaults nothing more), nothing raises, and the Kubernetes CEL library
functions we implement agree with their definitions.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyinformers.testing.apiserver._cel import cel_causes, parse_quantity, rule_causes
from pyinformers.testing.apiserver._structural import (
    apply_defaults,
    check_custom_object,
    structural_causes,
)

NAMES = st.sampled_from(["a", "b", "c", "metadata", "kind"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(NAMES, children, max_size=3),
    max_leaves=8,
)
_LEAF_VALUES = {
    "string": st.text(max_size=3),
    "integer": st.integers(-3, 3),
    "boolean": st.booleans(),
    "number": st.floats(-3, 3),
}


@st.composite
def leaf(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(sorted(_LEAF_VALUES)))
    schema: dict = {"type": kind}
    if draw(st.booleans()):
        schema["default"] = draw(_LEAF_VALUES[kind])
    if draw(st.booleans()):
        schema["nullable"] = True
    return schema


def _node(children: st.SearchStrategy) -> st.SearchStrategy:
    objects = st.builds(
        lambda props, preserve: {
            "type": "object",
            "properties": props,
            **({"x-kubernetes-preserve-unknown-fields": True} if preserve else {}),
        },
        st.dictionaries(NAMES, children, max_size=3),
        st.booleans(),
    )
    arrays = st.builds(lambda items: {"type": "array", "items": items}, children)
    maps = st.builds(lambda values: {"type": "object", "additionalProperties": values}, children)
    embedded = st.just(
        {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        }
    )
    return objects | arrays | maps | embedded


SCHEMAS = (
    st.builds(  # the root's apiVersion, kind and metadata are the server's: no schema of ours there
        lambda props: {"type": "object", "properties": props},
        st.dictionaries(
            st.sampled_from(["a", "b", "c"]), st.recursive(leaf(), _node, max_leaves=6), max_size=3
        ),
    )
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS, st.dictionaries(NAMES, JSON, max_size=4))
def test_a_checked_object_is_a_fixed_point_of_pruning_and_defaulting(schema, obj):
    obj = {**obj, "apiVersion": "g/v1", "kind": "K", "metadata": {"name": "x"}}
    first, _, _ = check_custom_object(schema, obj)
    second, _, pruned = check_custom_object(schema, first)
    assert second == first
    assert pruned == []
    assert apply_defaults(schema, first) == first
    assert first["metadata"]["name"] == "x"  # the root keeps its metadata whatever the schema says


@settings(max_examples=200, deadline=None)
@given(SCHEMAS)
def test_a_generated_schema_is_structural(schema):
    assert structural_causes(schema, "root") == []


RULES = [
    {"rule": "self.a == oldSelf.a"},
    {"rule": "has(self.b) || size(self) >= 0", "messageExpression": "'x' + string(self.a)"},
    {"rule": "self.c.all(x, x > 0)", "fieldPath": ".c", "reason": "FieldValueForbidden"},
]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(NAMES, JSON, max_size=4), st.dictionaries(NAMES, JSON, max_size=4) | st.none()
)
def test_cel_rules_never_raise_whatever_the_values(obj, old):
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-validations": RULES,
    }
    result = cel_causes(schema, obj, old)
    assert all(isinstance(cause, tuple) and len(cause) == 3 for cause in result.causes)


@pytest.mark.parametrize(
    "text, value",
    [
        ("1", 1),
        ("1500m", Fraction(3, 2)),
        ("2Gi", 2**31),
        ("1k", 1000),
        ("1e3", 1000),
        ("0.5", Fraction(1, 2)),
        ("-2Ki", -2048),
        ("100n", Fraction(1, 10**7)),
        ("1E", 10**18),
        (".5M", 500_000),
    ],
)
def test_quantities_parse_as_kubernetes_defines_them(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.5.5", "Gi", "1 Gi", "1gi", "--1"])
def test_a_malformed_quantity_is_a_value_error(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_a_rule_with_a_syntax_error_is_a_cause_of_the_crd():
    causes = rule_causes(
        {"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}, {"rule": "true"}]},
        "root",
    )
    assert [(reason, field) for reason, field, _ in causes] == [
        ("FieldValueInvalid", "root.x-kubernetes-validations[0].rule")
    ]
    assert "compilation failed: ERROR: <input>:1:9: Syntax error:" in causes[0][2]


def test_a_rule_the_library_cannot_compile_is_skipped_and_warned_about_once(caplog):
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.notAFunction()", "message": "m"}],
    }
    assert rule_causes(schema, "root") == []
    with caplog.at_level("WARNING", logger="pyinformers.testing.apiserver"):
        assert cel_causes(schema, {"a": 1}).causes == []
        assert cel_causes(schema, {"a": 2}).causes == []
    assert len([r for r in caplog.records if "notAFunction" in r.getMessage()]) <= 1
