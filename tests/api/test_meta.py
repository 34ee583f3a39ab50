"""Tests for pyinformers.api.meta: keys, owner references, deep copies."""

from __future__ import annotations

import collections
import copy
import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.api.meta import (
    AlreadyOwnedError,
    annotations,
    controller_of,
    deep_copy,
    describe,
    is_controlled_by,
    labels,
    name,
    namespace,
    object_key,
    owner_references,
    resource_version,
    set_controller_reference,
    split_key,
    uid,
)


def obj(name="x", ns="default", uid_="u1", kind="ConfigMap", api_version="v1", **md):
    meta = {"name": name, "uid": uid_, **md}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


# ---------------------------------------------------------------- keys


def test_object_key_of_namespaced_object_is_namespace_slash_name():
    assert object_key(obj("a", "ns1")) == "ns1/a"


def test_object_key_of_cluster_scoped_object_is_name():
    assert object_key(obj("node-1", None)) == "node-1"
    assert object_key({"metadata": {"name": "n", "namespace": ""}}) == "n"


@pytest.mark.parametrize(
    "bad, reason",
    [
        ({}, "no metadata"),
        ({"metadata": None}, "not a mapping"),
        ({"metadata": {}}, "metadata.name is missing"),
        ({"metadata": {"name": ""}}, "metadata.name is empty"),
        ({"metadata": {"name": 3}}, "must be a string"),
        ({"metadata": {"name": "a/b"}}, "contains '/'"),
        ({"metadata": {"name": "a", "namespace": "x/y"}}, "metadata.namespace"),
        ("ns/name", "not an object mapping"),
    ],
)
def test_object_key_rejects_malformed_objects_saying_why(bad, reason):
    with pytest.raises(ValueError, match=reason):
        object_key(bad)


def test_split_key_inverts_object_key():
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("a") == (None, "a")


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("", "empty"),
        ("/a", "empty namespace"),
        ("a/", "empty name"),
        ("a/b/c", "more than one"),
        (None, "string"),
    ],
)
def test_split_key_rejects_malformed_keys_saying_why(bad, reason):
    with pytest.raises(ValueError, match=reason):
        split_key(bad)


_part = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20)


@given(_part, st.none() | _part)
def test_split_key_of_object_key_round_trips(n, ns):
    assert split_key(object_key(obj(n, ns))) == (ns, n)


# ---------------------------------------------------------------- getters


def test_getters_tolerate_missing_metadata():
    empty = {}
    assert name(empty) is None and namespace(empty) is None and uid(empty) is None
    assert resource_version(empty) is None
    assert (
        dict(labels(empty)) == {}
        and dict(annotations(empty)) == {}
        and owner_references(empty) == []
    )


def test_getters_read_metadata():
    o = obj("a", "ns", "u", resourceVersion="7", labels={"k": "v"}, annotations={"x": "y"})
    assert (name(o), namespace(o), uid(o), resource_version(o)) == ("a", "ns", "u", "7")
    assert labels(o) == {"k": "v"} and annotations(o) == {"x": "y"}


# ---------------------------------------------------------------- owner references


def owner(name="dep", ns="default", uid_="owner-1"):
    return obj(name, ns, uid_, kind="Deployment", api_version="apps/v1")


def test_set_controller_reference_adds_a_full_controller_reference():
    child = obj("rs", "default")
    set_controller_reference(owner(), child)
    assert owner_references(child) == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "dep",
            "uid": "owner-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert controller_of(child)["uid"] == "owner-1"
    assert is_controlled_by(child, owner())
    assert not is_controlled_by(child, owner(uid_="other"))


def test_set_controller_reference_replaces_a_reference_to_the_same_owner():
    child = obj(
        "rs",
        "default",
        ownerReferences=[
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-1"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "dep", "uid": "owner-1"},
        ],
    )
    set_controller_reference(owner(), child)
    set_controller_reference(owner(), child)
    refs = owner_references(child)
    assert [r["uid"] for r in refs] == ["cm-1", "owner-1"]
    assert refs[1]["controller"] is True and refs[1]["blockOwnerDeletion"] is True


def test_set_controller_reference_refuses_a_second_controller_naming_it():
    child = obj("rs", "default")
    set_controller_reference(owner("first", uid_="u-first"), child)
    with pytest.raises(AlreadyOwnedError, match="first") as info:
        set_controller_reference(owner("second", uid_="u-second"), child)
    assert info.value.owner["uid"] == "u-first"
    assert [r["uid"] for r in owner_references(child)] == ["u-first"]


def test_set_controller_reference_replaces_a_stale_reference_to_a_recreated_owner():
    # The owner was deleted and recreated under the same name: a new uid. Its child must end up
    # with one controller reference, to the new owner, not two (issue 12, item 8).
    child = obj("rs", "default")
    set_controller_reference(owner(uid_="old-uid"), child)
    set_controller_reference(owner(uid_="new-uid"), child)
    refs = owner_references(child)
    assert [(r["name"], r["uid"]) for r in refs] == [("dep", "new-uid")]
    assert controller_of(child)["uid"] == "new-uid"


def test_set_controller_reference_matches_the_owner_by_group_not_version():
    child = obj("rs", "default")
    set_controller_reference(owner(), child)
    newer = dict(owner(uid_="u2"), apiVersion="apps/v2")
    set_controller_reference(newer, child)
    assert [(r["apiVersion"], r["uid"]) for r in owner_references(child)] == [("apps/v2", "u2")]
    other_group = dict(owner(uid_="u3"), apiVersion="example.com/v1")
    with pytest.raises(AlreadyOwnedError):
        set_controller_reference(other_group, child)


def test_set_controller_reference_refuses_cross_namespace_owner():
    with pytest.raises(ValueError, match="cross-namespace"):
        set_controller_reference(owner(ns="a"), obj("x", "b"))


def test_set_controller_reference_refuses_namespaced_owner_of_cluster_scoped_object():
    with pytest.raises(ValueError, match="cluster-scoped"):
        set_controller_reference(owner(ns="a"), obj("x", None))


def test_cluster_scoped_owner_may_own_a_namespaced_object():
    child = obj("x", "b")
    set_controller_reference(owner(ns=None), child)
    assert controller_of(child)["name"] == "dep"


def test_set_controller_reference_refuses_an_owner_without_uid():
    bad = owner()
    del bad["metadata"]["uid"]
    with pytest.raises(ValueError, match="metadata.uid"):
        set_controller_reference(bad, obj())


def test_set_controller_reference_creates_metadata_when_missing_namespace_matches():
    child = {"metadata": {"name": "x"}}
    set_controller_reference(owner(ns=None), child)
    assert controller_of(child)["uid"] == "owner-1"


def test_controller_of_ignores_non_controller_references():
    child = obj(ownerReferences=[{"uid": "a", "controller": False}, {"uid": "b"}])
    assert controller_of(child) is None
    assert not is_controlled_by(child, owner(uid_="a"))


# ---------------------------------------------------------------- deep copy

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=30,
)


@given(json_values)
def test_deep_copy_equals_original_and_shares_no_container(value):
    copied = deep_copy(value)
    assert copied == value

    def containers(v, acc):
        if isinstance(v, (dict, list)):
            acc.append(id(v))
            for c in v.values() if isinstance(v, dict) else v:
                containers(c, acc)
        return acc

    if isinstance(value, (dict, list)):
        assert not set(containers(value, [])) & set(containers(copied, []))


def test_deep_copy_copies_non_json_values_faithfully():
    when = datetime.datetime(2024, 1, 1)
    inner = collections.OrderedDict(a=[1])
    value = {"t": (1, [2]), "d": when, "nested": [{"x": (3,)}, inner]}
    copied = deep_copy(value)
    assert copied == value
    assert type(copied["nested"][1]) is collections.OrderedDict
    assert copied["nested"][1]["a"] is not inner["a"]
    assert type(copied["t"]) is tuple and copied["t"][1] is not value["t"][1]
    assert copied["nested"][0] is not value["nested"][0]


def test_deep_copy_of_a_pod_is_independent():
    pod = obj(labels={"a": "b"})
    copied = deep_copy(pod)
    copied["metadata"]["labels"]["a"] = "changed"
    assert pod["metadata"]["labels"]["a"] == "b"
    assert copied == {
        **copy.deepcopy(pod),
        "metadata": {**pod["metadata"], "labels": {"a": "changed"}},
    }


# ---------------------------------------------------------------- describe (log identity)


def test_describe_names_an_object_by_identity_only():
    secret = obj("s", "ns", "u-1", kind="Secret", resourceVersion="42")
    secret["data"] = {"password": "aHVudGVyMg=="}
    text = describe(secret)
    assert text == "Secret ns/s uid=u-1 rv=42"
    assert "aHVudGVyMg" not in text


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["kind", "metadata", "name", "namespace", "uid", "data", "key", "obj"]
                ),
                children,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_describe_never_raises_and_never_shows_data(value):
    text = describe(value)
    assert isinstance(text, str)
    if isinstance(value, dict) and isinstance(value.get("data"), str) and len(value["data"]) > 3:
        assert value["data"] not in text.replace(str(value.get("kind")), "")
