"""json_patch: applying the patch to the original gives the changed document, exactly as JSON."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pyinformers.webhook import json_patch

_keys = st.sampled_from(["a", "b", "spec", "a/b", "~0", "~", "", "replicas", "x~1y"])
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-2, 2, allow_nan=False)
    | st.sampled_from(["", "x", "1"])
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)
_docs = st.dictionaries(_keys, _json, max_size=5)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _apply(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """A reference RFC 6902 applier for add, remove and replace (all json_patch emits)."""
    doc = copy.deepcopy(doc)
    for op in ops:
        if op["path"] == "":
            assert op["op"] == "replace"
            doc = copy.deepcopy(op["value"])
            continue
        *parents, last = [_unescape(t) for t in op["path"].split("/")[1:]]
        target = doc
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        if isinstance(target, list):
            if op["op"] == "add":
                target.insert(len(target) if last == "-" else int(last), copy.deepcopy(op["value"]))
            elif op["op"] == "remove":
                del target[int(last)]
            else:
                target[int(last)] = copy.deepcopy(op["value"])
        else:
            if op["op"] == "add":
                target[last] = copy.deepcopy(op["value"])
            elif op["op"] == "remove":
                del target[last]
            else:
                assert last in target
                target[last] = copy.deepcopy(op["value"])
    return doc


def _as_json(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


@settings(max_examples=400, deadline=None)
@given(_docs, _docs)
def test_applying_the_patch_to_the_original_gives_the_changed_document(
    old: dict, new: dict
) -> None:
    before = _as_json(old)
    ops = json_patch(old, new)
    assert _as_json(_apply(old, ops)) == _as_json(new)
    assert _as_json(old) == before  # the original is never modified


@given(_docs)
def test_equal_documents_give_an_empty_patch(doc: dict) -> None:
    assert json_patch(doc, copy.deepcopy(doc)) == []


def test_booleans_integers_and_floats_are_different_json_values() -> None:
    assert json_patch({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert json_patch({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]


def test_keys_with_slashes_and_tildes_are_escaped_in_the_pointer() -> None:
    ops = json_patch(
        {"metadata": {}}, {"metadata": {"labels": {"app.kubernetes.io/name": "x", "a~b": "y"}}}
    )
    assert ops == [
        {
            "op": "add",
            "path": "/metadata/labels",
            "value": {"app.kubernetes.io/name": "x", "a~b": "y"},
        }
    ]
    ops = json_patch({"l": {"a/b": 1, "a~b": 1}}, {"l": {"a/b": 2, "a~b": 2}})
    assert [op["path"] for op in ops] == ["/l/a~1b", "/l/a~0b"]


def test_a_shorter_list_is_trimmed_from_its_end() -> None:
    assert json_patch({"l": [1, 2, 3]}, {"l": [1]}) == [
        {"op": "remove", "path": "/l/2"},
        {"op": "remove", "path": "/l/1"},
    ]
