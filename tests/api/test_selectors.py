"""Tests for pyinformers.api._selectors: label and field selectors as the API server reads them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyinformers.api._selectors import (
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorOperator,
    as_field_selector,
    as_label_selector,
    validate_label_key,
    validate_label_value,
)

# ---------------------------------------------------------------- string form


@pytest.mark.parametrize(
    "text, labels, expected",
    [
        ("", {}, True),
        ("", {"a": "b"}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a!=b", {"a": "c"}, True),
        ("a in (x,y)", {"a": "y"}, True),
        ("a in (x,y)", {"a": "z"}, False),
        ("a in (x,y)", {}, False),
        ("a notin (x)", {}, True),
        ("a notin (x)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": "x"}, False),
        ("!a", {"b": "x"}, True),
        ("!a", {"a": "x"}, False),
        ("a=b,c=d", {"a": "b", "c": "d", "e": "f"}, True),
        ("a=b,c=d", {"a": "b"}, False),
        ("a=b,a=c", {"a": "b"}, False),
        ("a=", {"a": ""}, True),
        ("a=", {"a": "x"}, False),
        ("n>3", {"n": "4"}, True),
        ("n>3", {"n": "3"}, False),
        ("n<3", {"n": "x"}, False),
        ("n>3", {"n": "3_0"}, False),
        ("n<3", {}, False),
        ("a in ()", {"a": ""}, True),
        ("a in ()", {}, False),
        ("a in (,x)", {"a": ""}, True),
        (" app = web , tier in ( a , b ) ", {"app": "web", "tier": "b"}, True),
        ("example.com/team=blue", {"example.com/team": "blue"}, True),
        ("in in (notin,in)", {"in": "notin"}, True),
        ("notin notin (in)", {"notin": "in"}, False),
        ("x in (a,,b)", {"x": ""}, True),
    ],
)
def test_string_selectors_match_like_the_api_server(text, labels, expected):
    assert LabelSelector.parse(text).matches(labels) is expected


def test_none_labels_mean_no_labels():
    assert LabelSelector.parse("!a").matches(None)
    assert not LabelSelector.parse("a").matches(None)


def test_str_is_canonical_sorted_by_key_with_sorted_values():
    sel = LabelSelector.parse("z in (c,a,b),a==1,!m,k,b!=2,n notin (y,x)")
    assert str(sel) == "a=1,b!=2,k,!m,n notin (x,y),z in (a,b,c)"
    assert LabelSelector.parse(str(sel)) == sel


def test_empty_selector_is_everything():
    assert LabelSelector.parse("").empty
    assert LabelSelector.everything().empty and str(LabelSelector.everything()) == ""
    assert not LabelSelector.parse("a").empty


@pytest.mark.parametrize(
    "text, position, reason",
    [
        ("a=b,", 4, "expected a requirement after ','"),
        ("a in (x", 5, "unclosed"),
        ("a in x", 5, "expected '('"),
        ("a b", 2, "expected one of"),
        ("=b", 0, "expected a label key"),
        ("a=b c", 4, "expected ',' or end"),
        ("-a=b", 0, "start and end with an alphanumeric"),
        ("a=b,c=-x", 6, "label value"),
        ("Example.com/a=b", 0, "DNS subdomain"),
        ("a/b/c=d", 0, "more than one '/'"),
        ("a=" + "x" * 64, 2, "longer than 63"),
        ("n>x", 2, "integer"),
        ("a=b,=c", 4, "expected a requirement after ','"),
    ],
)
def test_bad_syntax_points_at_position_and_reason(text, position, reason):
    with pytest.raises(ValueError) as info:
        LabelSelector.parse(text)
    message = str(info.value)
    assert f"at position {position}:" in message, message
    assert reason in message


# ---------------------------------------------------------------- object form


def test_object_form_with_match_labels_and_expressions():
    sel = LabelSelector.from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
            ],
        }
    )
    assert str(sel) == "app=web,!canary,env notin (dev),tier in (a,b),zone"
    assert sel.matches({"app": "web", "tier": "a", "zone": "z1"})
    assert not sel.matches({"app": "web", "tier": "a", "zone": "z1", "canary": "1"})
    assert not sel.matches({"app": "web", "tier": "a", "zone": "z1", "env": "dev"})
    assert sel == LabelSelector.from_dict(sel.to_dict())
    assert LabelSelector.from_dict({}).empty


@pytest.mark.parametrize(
    "spec, reason",
    [
        ({"matchLabels": {"a": "-bad"}}, r"matchLabels\['a'\]: label value"),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "at least one value",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "takes no values",
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "operator"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]}, "values"),
        ({"app": "web"}, "unknown field"),
    ],
)
def test_bad_object_form_names_the_field(spec, reason):
    with pytest.raises(ValueError, match=reason):
        LabelSelector.from_dict(spec)


def test_as_label_selector_accepts_every_spelling():
    sel = LabelSelector.parse("a=b")
    assert as_label_selector(sel) is sel
    assert as_label_selector("a=b") == sel
    assert as_label_selector({"matchLabels": {"a": "b"}}) == sel
    assert as_label_selector(None).empty
    with pytest.raises(TypeError):
        as_label_selector(3)


def test_key_and_value_validation():
    validate_label_key("a" * 63)
    validate_label_key("x.example.com/" + "a" * 63)
    validate_label_value("")
    validate_label_value("A_b.c-9")
    for bad in ("a" * 64, "/a", "a_", "x" * 254 + "/a", "UPPER.com/a", ""):
        with pytest.raises(ValueError):
            validate_label_key(bad)
    for bad in ("a" * 64, "-a", "a b"):
        with pytest.raises(ValueError):
            validate_label_value(bad)


# ---------------------------------------------------------------- properties against a reference

KEYS = ["a", "in", "x.io/c"]
VALUES = ["", "1", "2", "notin"]

requirements = st.one_of(
    st.builds(
        lambda k, v: Requirement.create(k, SelectorOperator.EQUALS, [v]),
        st.sampled_from(KEYS),
        st.sampled_from(VALUES),
    ),
    st.builds(
        lambda k, v: Requirement.create(k, SelectorOperator.NOT_EQUALS, [v]),
        st.sampled_from(KEYS),
        st.sampled_from(VALUES),
    ),
    st.builds(
        lambda k, vs: Requirement.create(k, SelectorOperator.IN, vs),
        st.sampled_from(KEYS),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
    ),
    st.builds(
        lambda k, vs: Requirement.create(k, SelectorOperator.NOT_IN, vs),
        st.sampled_from(KEYS),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
    ),
    st.builds(lambda k: Requirement.create(k, SelectorOperator.EXISTS), st.sampled_from(KEYS)),
    st.builds(
        lambda k: Requirement.create(k, SelectorOperator.DOES_NOT_EXIST), st.sampled_from(KEYS)
    ),
    st.builds(
        lambda k, v: Requirement.create(k, SelectorOperator.GREATER_THAN, [v]),
        st.sampled_from(KEYS),
        st.sampled_from(["0", "1"]),
    ),
    st.builds(
        lambda k, v: Requirement.create(k, SelectorOperator.LESS_THAN, [v]),
        st.sampled_from(KEYS),
        st.sampled_from(["1", "2"]),
    ),
)
label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


def reference_match(reqs, labels):
    """The obvious, slow semantics: every requirement holds on its own."""
    for r in reqs:
        v = labels.get(r.key)
        if r.operator in (SelectorOperator.EQUALS, SelectorOperator.IN) and v not in r.values:
            return False
        if (
            r.operator in (SelectorOperator.NOT_EQUALS, SelectorOperator.NOT_IN)
            and v is not None
            and v in r.values
        ):
            return False
        if r.operator is SelectorOperator.EXISTS and v is None:
            return False
        if r.operator is SelectorOperator.DOES_NOT_EXIST and v is not None:
            return False
        if r.operator in (SelectorOperator.GREATER_THAN, SelectorOperator.LESS_THAN):
            if v is None or not v.isdigit():
                return False
            if r.operator is SelectorOperator.GREATER_THAN and not int(v) > int(r.values[0]):
                return False
            if r.operator is SelectorOperator.LESS_THAN and not int(v) < int(r.values[0]):
                return False
    return True


@settings(max_examples=200, deadline=None)
@given(st.lists(requirements, max_size=4), st.lists(label_sets, min_size=1, max_size=6))
def test_selectors_match_like_the_reference_and_survive_a_round_trip(reqs, label_set_list):
    sel = LabelSelector(reqs)
    again = LabelSelector.parse(str(sel))
    assert again == sel and str(again) == str(sel)
    for labels in label_set_list:
        expected = reference_match(reqs, labels)
        assert sel.matches(labels) is expected
        assert again.matches(labels) is expected
        assert all(r.matches(labels) for r in reqs) is expected


# ---------------------------------------------------------------- field selectors

POD = {
    "metadata": {"name": "web-1", "namespace": "prod"},
    "spec": {"nodeName": "n1", "hostNetwork": False, "priority": 5},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", True),
        ("metadata.name=web-1", True),
        ("metadata.name==web-1", True),
        ("metadata.name!=web-1", False),
        ("metadata.namespace=prod,status.phase=Running", True),
        ("metadata.namespace=prod,status.phase!=Running", False),
        ("spec.nodeName=", False),
        ("spec.missing=", True),
        ("spec.missing!=", False),
        ("spec.hostNetwork=false", True),
        ("spec.priority=5", True),
        ("spec=x", False),
        ("metadata.name.deeper=x", False),
    ],
)
def test_field_selectors_match_dotted_paths(text, expected):
    assert FieldSelector.parse(text).matches(POD) is expected


def test_empty_field_selector_terms_are_skipped_like_the_api_server_does():
    assert FieldSelector.parse("metadata.name=x,,metadata.namespace=y,") == FieldSelector.parse(
        "metadata.namespace=y,metadata.name=x"
    )
    assert FieldSelector.parse(" , ").empty


def test_field_selector_escapes_round_trip():
    sel = FieldSelector.parse(r"metadata.name=a\,b\=c,metadata.namespace==ns")
    assert sel.matches({"metadata": {"name": "a,b=c", "namespace": "ns"}})
    assert str(sel) == r"metadata.name=a\,b\=c,metadata.namespace=ns"
    assert FieldSelector.parse(str(sel)) == sel


@pytest.mark.parametrize(
    "text, reason",
    [
        ("metadata.name", "no operator"),
        ("=x", "empty field"),
        ("a..b=x", "empty segment"),
        (r"a=b\x", "invalid escape"),
        ("a=b=c", "unescaped '='"),
    ],
)
def test_bad_field_selectors_say_why(text, reason):
    with pytest.raises(ValueError, match="at position") as info:
        FieldSelector.parse(text)
    assert reason in str(info.value)


def test_as_field_selector_accepts_every_spelling():
    sel = FieldSelector.parse("metadata.name=x")
    assert as_field_selector(sel) is sel
    assert as_field_selector("metadata.name=x") == sel
    assert as_field_selector({"metadata.name": "x"}) == sel
    assert as_field_selector(None).empty


_ws = st.sampled_from(["", " ", "  "])


@st.composite
def selector_strings(draw):
    """Selector strings as users write them: any spacing, '==' or '=', sets in any order."""
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(KEYS))
        form = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!"]))
        w1, w2 = draw(_ws), draw(_ws)
        if form in ("=", "==", "!="):
            parts.append(f"{w1}{key}{w1}{form}{w2}{draw(st.sampled_from(VALUES))}{w2}")
        elif form in ("in", "notin"):
            vals = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=3))
            parts.append(f"{w1}{key} {form}{w2}({w2}{(w2 + ',' + w2).join(vals)}{w2}){w1}")
        elif form == "exists":
            parts.append(f"{w1}{key}{w2}")
        else:
            parts.append(f"{w1}!{w2}{key}{w1}")
    return ",".join(parts)


@settings(max_examples=150, deadline=None)
@given(selector_strings(), st.lists(label_sets, min_size=1, max_size=5))
def test_parsed_strings_print_canonically_and_parse_back_to_the_same_matches(text, label_set_list):
    sel = LabelSelector.parse(text)
    again = LabelSelector.parse(str(sel))
    assert again == sel
    for labels in label_set_list:
        assert (
            again.matches(labels)
            is sel.matches(labels)
            is reference_match(sel.requirements, labels)
        )


def test_label_selectors_accept_any_mapping_of_labels():
    from types import MappingProxyType

    sel = LabelSelector.parse("a=b,c in (d),!e")
    assert sel.matches(MappingProxyType({"a": "b", "c": "d"}))
    assert not sel.matches(MappingProxyType({"a": "b", "c": "d", "e": ""}))


_field_values = st.text(alphabet="ab,=!\\.-", max_size=6).map(str.strip)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["metadata.name", "spec.x"]),
            st.sampled_from(["=", "==", "!="]),
            _field_values,
        ),
        max_size=3,
    )
)
def test_field_selectors_with_escaped_values_round_trip(terms):
    def escape(v):
        return "".join("\\" + c if c in ",=!\\" else c for c in v)

    text = ",".join(f"{f}{op}{escape(v)}" for f, op, v in terms)
    sel = FieldSelector.parse(text)
    assert FieldSelector.parse(str(sel)) == sel
    for _, _, v in terms:
        obj = {"metadata": {"name": v}, "spec": {"x": v}}
        expected = all((v2 == v) is (op != "!=") for _, op, v2 in terms)
        assert sel.matches(obj) is expected
