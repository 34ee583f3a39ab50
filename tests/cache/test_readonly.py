"""Read-only views: they refuse every change, copy nothing, and read as the object they wrap."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.api import meta
from pyinformers.cache import (
    DeletedFinalStateUnknown,
    ReadOnlyDict,
    ReadOnlyList,
    ResourceEventHandlerFuncs,
    read_only,
    read_only_handler,
    thaw,
)
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import FakeInformer

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=4), json_values, max_size=5)


def configmap(name="cm", labels=None):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "default",
            "resourceVersion": "1",
            "labels": dict(labels or {"app": "web"}),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u", "controller": True}
            ],
        },
        "data": {"k": "v"},
    }


def containers(view):
    """Every container a view hands out, depth first, with the path to it."""
    stack = [((), view)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, ReadOnlyDict):
            yield path, value
            stack.extend((path + (k,), value[k]) for k in value)
        elif isinstance(value, ReadOnlyList):
            yield path, value
            stack.extend((path + (i,), v) for i, v in enumerate(value))


@given(json_objects)
def test_a_view_reads_and_compares_as_the_object_it_wraps(obj):
    view = read_only(obj)
    assert view == obj and obj == view
    assert thaw(view) == obj
    assert len(view) == len(obj) and list(view) == list(obj)
    for key in obj:
        assert key in view and view.get(key) == obj[key] == view[key]


@given(json_objects)
def test_every_nested_container_refuses_every_change_and_the_object_is_unchanged(obj):
    before = copy.deepcopy(obj)
    for _path, view in containers(read_only(obj)):
        if isinstance(view, ReadOnlyDict):
            attempts = [
                lambda v=view: v.__setitem__("x", 1),
                lambda v=view: v.__delitem__("x"),
                lambda v=view: v.update({"x": 1}),
                lambda v=view: v.setdefault("x", 1),
                lambda v=view: v.pop("x"),
                lambda v=view: v.popitem(),
                lambda v=view: v.clear(),
            ]
        else:
            attempts = [
                lambda v=view: v.__setitem__(0, 1),
                lambda v=view: v.__delitem__(0),
                lambda v=view: v.append(1),
                lambda v=view: v.extend([1]),
                lambda v=view: v.insert(0, 1),
                lambda v=view: v.pop(),
                lambda v=view: v.remove(1),
                lambda v=view: v.sort(),
                lambda v=view: v.reverse(),
                lambda v=view: v.clear(),
            ]
        for attempt in attempts:
            with pytest.raises(TypeError, match="thaw"):
                attempt()
    assert obj == before


def test_augmented_assignment_through_a_view_is_refused():
    view = read_only(configmap())
    finalizers = read_only({"f": ["a"]})["f"]
    with pytest.raises(TypeError):
        finalizers += ["b"]
    with pytest.raises(TypeError, match="read-only"):
        view["metadata"]["labels"]["x"] = "y"


@given(json_objects)
def test_thaw_is_a_deep_mutable_copy_of_plain_containers(obj):
    thawed = thaw(read_only(obj))
    assert thawed == obj
    assert type(thawed) is dict
    thawed["__new__"] = 1
    assert "__new__" not in obj


def test_a_view_copies_nothing_and_shows_the_cached_object_itself():
    obj = configmap()
    view = read_only(obj)
    assert view._data is obj and view["metadata"]._data is obj["metadata"]
    assert read_only("text") == "text" and read_only(3) == 3  # scalars as they are


def test_the_object_helpers_read_views():
    view = read_only(configmap("web"))
    assert meta.name(view) == "web"
    assert meta.namespace(view) == "default"
    assert meta.object_key(view) == "default/web"
    assert meta.labels(view) == {"app": "web"}
    assert meta.controller_of(view)["name"] == "t"


def test_a_read_only_handler_hands_views_to_each_callback_and_keeps_resync_identity():
    seen = []
    handler = read_only_handler(
        ResourceEventHandlerFuncs(
            on_add=lambda obj, initial: seen.append(("add", obj, initial)),
            on_update=lambda old, new: seen.append(("update", old, new, old is new)),
            on_delete=lambda obj: seen.append(("delete", obj)),
        )
    )
    a, b = configmap(), configmap()
    handler.on_add(a, True)
    handler.on_update(a, b)
    handler.on_update(b, b)
    handler.on_delete(DeletedFinalStateUnknown("default/cm", b))
    handler.on_delete(b)
    assert [s[0] for s in seen] == ["add", "update", "update", "delete", "delete"]
    assert isinstance(seen[0][1], ReadOnlyDict) and seen[0][2] is True
    assert isinstance(seen[1][1], ReadOnlyDict) and isinstance(seen[1][2], ReadOnlyDict)
    assert seen[1][3] is False and seen[2][3] is True  # a resync is still old is new
    tombstone = seen[3][1]
    assert isinstance(tombstone, DeletedFinalStateUnknown) and tombstone.key == "default/cm"
    assert isinstance(tombstone.obj, ReadOnlyDict)
    assert isinstance(seen[4][1], ReadOnlyDict)


def test_a_read_only_handler_keeps_the_callbacks_the_handler_lacks_absent():
    handler = read_only_handler(ResourceEventHandlerFuncs(on_add=lambda obj, initial: None))
    assert handler.on_update is None and handler.on_delete is None


def test_a_handler_that_mutates_through_an_informer_is_refused_and_the_cache_is_intact():
    informer = FakeInformer(CONFIGMAPS)
    informer.indexer.add(configmap("a"))
    errors = []

    def on_add(obj, initial):
        try:
            obj["metadata"]["labels"]["touched"] = "yes"
        except TypeError:
            errors.append(meta.name(obj))

    informer.add_event_handler(read_only_handler(ResourceEventHandlerFuncs(on_add=on_add)))
    informer.add(configmap("b"))
    assert errors == ["a", "b"]
    for name in ("a", "b"):
        assert informer.indexer.get_by_key(f"default/{name}")["metadata"]["labels"] == {
            "app": "web"
        }
