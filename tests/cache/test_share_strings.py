"""share_strings and share_metadata_strings: equal values, shared short strings, a bounded table."""

from __future__ import annotations

import copy

import orjson
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.cache import share_metadata_strings, share_strings
from pyinformers.cache._transforms import _GENERATION, _SHARED_VALUE_LENGTH, _TABLE

# JSON values as the API server sends them: strings short and long, numbers, nesting.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.text(min_size=60, max_size=70)
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=40,
)


def _strings(node):
    if type(node) is str:
        yield node
    elif type(node) is dict:
        for value in node.values():
            yield from _strings(value)
    elif type(node) is list:
        for value in node:
            yield from _strings(value)


@given(_json)
def test_sharing_keeps_every_value_equal_and_a_second_pass_changes_nothing(value):
    expected = copy.deepcopy(value)
    assert share_strings(value) is value and value == expected
    once = [id(s) for s in _strings(value)]
    share_strings(value)
    assert value == expected and [id(s) for s in _strings(value)] == once


@given(_json)
def test_two_decodes_of_one_object_share_their_short_strings_and_only_those(value):
    raw = orjson.dumps(
        {"v": value}
    )  # an object, as the API sends them (a bare string is not shared)
    first, second = share_strings(orjson.loads(raw)), share_strings(orjson.loads(raw))
    assert first == second
    for a, b in zip(_strings(first), _strings(second)):
        if len(a) <= _SHARED_VALUE_LENGTH:
            assert a is b, a
        elif (
            len(a) > 1
        ):  # long strings are left as decoded (one-character ones are cached by CPython)
            assert a is not b, a


def test_a_deployment_shares_what_repeats_between_objects():
    def deployment(name):
        return orjson.loads(
            orjson.dumps(
                {
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "nginx", "image": "nginx:latest", "args": ["-g"]}
                                ]
                            }
                        }
                    },
                    "status": {"conditions": [{"type": "Available", "status": "True"}]},
                }
            )
        )

    a, b = share_strings(deployment("a")), share_strings(deployment("b"))
    ca, cb = (
        a["spec"]["template"]["spec"]["containers"][0],
        b["spec"]["template"]["spec"]["containers"][0],
    )
    assert ca["image"] is cb["image"] and ca["args"][0] is cb["args"][0]
    assert a["status"]["conditions"][0]["type"] is b["status"]["conditions"][0]["type"]
    assert a["metadata"]["name"] == "a" and b["metadata"]["name"] == "b"
    for other in ("text", 3, None, [b"bytes"]):
        assert share_strings(other) is other


def test_the_table_stays_bounded_and_keeps_what_objects_keep_bringing():
    # A fresh string of a repeated value, so identity shows whether the table kept the first.
    kept = share_strings({"v": "".join(["keep", "-me"])})["v"]
    for i in range(5 * _GENERATION):
        share_metadata_strings({"metadata": {"creationTimestamp": f"2026-12-03T00:00:{i:08d}Z"}})
        if i % 1000 == 0:  # seen in every generation: it stays in the table
            assert share_strings({"v": "".join(["keep", "-me"])})["v"] is kept
        assert len(_TABLE.young) < _GENERATION and len(_TABLE.old) <= _GENERATION
    # one unique string is gone two generations later: a new copy is what the table holds now
    first = share_strings({"v": "".join(["once", "-only"])})["v"]
    for i in range(2 * _GENERATION + 1):
        share_strings({"v": f"filler-{i}"})
    assert share_strings({"v": "".join(["once", "-only"])})["v"] is not first


def test_metadata_sharing_leaves_unique_fields_and_long_values_alone():
    def pod(name):
        return orjson.loads(
            orjson.dumps(
                {
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "uid": name + "-uid",
                        "namespace": "team-a",
                        "labels": {"app": "web", "blob": "x" * 100},
                        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1"}],
                    },
                }
            )
        )

    a, b = share_metadata_strings(pod("p1")), share_metadata_strings(pod("p2"))
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["metadata"]["labels"]["app"] is b["metadata"]["labels"]["app"]
    assert (
        a["metadata"]["ownerReferences"][0]["name"] is b["metadata"]["ownerReferences"][0]["name"]
    )
    assert a["metadata"]["labels"]["blob"] is not b["metadata"]["labels"]["blob"]
