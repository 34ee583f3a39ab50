"""Every public parser fails on bad input with ValueError (or a documented subclass), never with
AttributeError, TypeError or KeyError from deep inside (issue 12).

Parsers: LabelSelector.parse/from_dict (and as_label_selector on str/dict), FieldSelector.parse/from_dict,
Resource.from_crd on dicts and on YAML files, object_key/split_key, and the names a Resource path takes.
"""

from __future__ import annotations

import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyinformers.api._resource import Resource
from pyinformers.api._selectors import (
    FieldSelector,
    LabelSelector,
    as_field_selector,
    as_label_selector,
)
from pyinformers.api.meta import object_key, split_key

# JSON-ish values, with the shapes the parsers look for mixed in.
_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
)
_KEYS = [
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "app",
    "kind",
    "spec",
    "group",
    "names",
    "plural",
    "scope",
    "versions",
    "version",
    "name",
    "served",
    "storage",
    "metadata",
    "namespace",
    "CustomResourceDefinition",
    "Namespaced",
]
_json = st.recursive(
    _scalars | st.sampled_from(_KEYS),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=25,
)


def _only_value_error(fn, *args):
    try:
        fn(*args)
    except ValueError:
        pass


@given(_json)
def test_label_selector_from_dict_raises_only_value_error(value):
    _only_value_error(LabelSelector.from_dict, value)


@given(st.fixed_dictionaries({}, optional={"matchLabels": _json, "matchExpressions": _json}))
def test_label_selector_from_dict_on_selector_shaped_input(value):
    _only_value_error(LabelSelector.from_dict, value)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "matchExpressions": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "key": _json,
                        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt"])
                        | _json,
                        "values": _json,
                    },
                ),
                max_size=3,
            )
        },
    )
)
def test_label_selector_from_dict_on_expression_shaped_input(value):
    _only_value_error(LabelSelector.from_dict, value)


@given(st.text(max_size=40) | st.text(alphabet="ab=!,() innotxz.-_/0123456789<>", max_size=40))
def test_label_and_field_selector_strings_raise_only_value_error(text):
    _only_value_error(LabelSelector.parse, text)
    _only_value_error(as_label_selector, text)
    _only_value_error(FieldSelector.parse, text)
    _only_value_error(as_field_selector, text)


@given(_json)
def test_field_selector_from_dict_raises_only_value_error(value):
    _only_value_error(FieldSelector.from_dict, value)


_crd_like = st.fixed_dictionaries(
    {
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "group": st.sampled_from(["example.com", ""]) | _json,
                "names": st.fixed_dictionaries(
                    {},
                    optional={
                        "plural": _json | st.just("things"),
                        "kind": _json | st.just("Thing"),
                    },
                )
                | _json,
                "scope": st.sampled_from(["Namespaced", "Cluster"]) | _json,
                "versions": st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "name": st.sampled_from(["v1", "v2"]) | _json,
                            "served": _json,
                            "storage": _json,
                        },
                    )
                    | _json,
                    max_size=3,
                )
                | _json,
                "version": _json,
            },
        )
    },
    optional={"kind": st.just("CustomResourceDefinition") | _json},
)


@given(
    _json.filter(lambda v: not isinstance(v, str)) | _crd_like,
    st.none() | st.sampled_from(["v1", "v2"]) | _json,
)
def test_resource_from_crd_on_dicts_raises_only_value_error(crd, version):
    # (A string is a file path: see the YAML tests below.)
    _only_value_error(Resource.from_crd, crd, version)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(max_size=200)
    | st.sampled_from(
        [
            "",
            "---\n",
            "kind: CustomResourceDefinition\nspec: [1, 2]\n",
            "a: [unclosed",
            "\t- x\n  : y",
            "!!python/object:os.system ls",
            "spec:\n  names: 3\n",
            "--- 1\n--- 2\n",
            "%YAML 9.9\n---\n",
            "kind: CustomResourceDefinition\nspec:\n  group: g\n  names: {plural: p, kind: K}\n  versions: [{name: 3}]\n",
        ]
    )
)
def test_resource_from_crd_on_malformed_yaml_raises_only_value_error(text):
    fd, path = tempfile.mkstemp(suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        _only_value_error(Resource.from_crd, path)
    finally:
        os.unlink(path)


def test_resource_from_crd_on_a_file_that_is_not_utf8_or_missing_raises_value_error(tmp_path):
    binary = tmp_path / "crd.yaml"
    binary.write_bytes(b"\xff\xfe\x00kind: x")
    _only_value_error(Resource.from_crd, str(binary))
    try:
        Resource.from_crd(str(tmp_path / "absent.yaml"))
    except (ValueError, FileNotFoundError):  # OSError subclasses are the documented file errors
        pass


@given(_json | st.text(max_size=10))
def test_keys_raise_only_value_error(value):
    _only_value_error(object_key, value)
    _only_value_error(split_key, value)


@given(
    _json | st.text(max_size=12) | st.sampled_from([".", "..", "a/b", "%2e%2e", "", "ok"]),
    _json | st.text(max_size=12) | st.sampled_from([".", "..", "a/b", "%2F", "", "ns"]),
)
def test_resource_paths_raise_only_value_error(name, namespace):
    resource = Resource("", "v1", "configmaps", "ConfigMap")
    _only_value_error(resource.path, namespace, name)
    _only_value_error(resource.path, namespace)
