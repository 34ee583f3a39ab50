"""Tests for pyinformers.cache._store: the Indexer and its indexes."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyinformers.api.meta import object_key
from pyinformers.cache._store import (
    NAMESPACE_INDEX,
    OWNER_UID_INDEX,
    Indexer,
    controller_owner_uid_index,
    default_indexers,
    namespace_index,
)
from pyinformers.cache._tombstone import DeletedFinalStateUnknown


def pod(name, ns="default", node=None, owner=None, rv="1", volumes=()):
    md = {"name": name, "namespace": ns, "resourceVersion": rv}
    if owner:
        md["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }
        ]
    spec = {"volumes": [{"name": v} for v in volumes]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def by_node(obj):
    node = obj["spec"].get("nodeName")
    return [node] if node else []


def by_volume(obj):
    return [v["name"] for v in obj["spec"]["volumes"]]


def keys(objs):
    return sorted(object_key(o) for o in objs)


def test_builtin_index_functions():
    assert namespace_index(pod("a", "ns")) == ["ns"]
    assert namespace_index({"metadata": {"name": "node"}}) == []
    assert controller_owner_uid_index(pod("a", owner="rs")) == ["uid-rs"]
    assert controller_owner_uid_index(pod("a")) == []
    assert set(default_indexers()) == {NAMESPACE_INDEX, OWNER_UID_INDEX}


def test_add_get_update_delete():
    store = Indexer(default_indexers())
    a = pod("a", owner="rs1")
    store.add(a)
    assert store.get_by_key("default/a") is a
    assert store.get(pod("a")) is a
    assert len(store) == 1 and store.list_keys() == ["default/a"]
    a2 = pod("a", "default", owner="rs2", rv="2")
    store.update(a2)
    assert store.get_by_key("default/a") is a2
    assert store.by_index(OWNER_UID_INDEX, "uid-rs1") == []
    assert store.by_index(OWNER_UID_INDEX, "uid-rs2") == [a2]
    store.delete(a2)
    assert store.get_by_key("default/a") is None and len(store) == 0
    assert store.list_index_func_values(OWNER_UID_INDEX) == []
    assert store.list_index_func_values(NAMESPACE_INDEX) == []
    store.delete(a2)  # absent: ignored


def test_delete_accepts_a_tombstone():
    store = Indexer(default_indexers())
    store.add(pod("a"))
    store.delete(DeletedFinalStateUnknown("default/a", None))
    assert len(store) == 0 and store.by_index(NAMESPACE_INDEX, "default") == []


def test_objects_are_stored_as_given_not_copied():
    store = Indexer()
    a = pod("a")
    store.add(a)
    assert store.list()[0] is a


def test_index_functions_may_return_several_values():
    store = Indexer({"volume": by_volume})
    a, b = pod("a", volumes=["x", "y"]), pod("b", volumes=["y", "z", "y"])
    store.add(a)
    store.add(b)
    assert keys(store.by_index("volume", "y")) == ["default/a", "default/b"]
    assert sorted(store.list_index_func_values("volume")) == ["x", "y", "z"]
    assert keys(store.index("volume", pod("q", volumes=["x", "z"]))) == ["default/a", "default/b"]
    assert sorted(store.index_keys("volume", "x")) == ["default/a"]


def test_adding_indexers_to_a_filled_store_indexes_existing_objects():
    store = Indexer()
    store.add(pod("a", node="n1"))
    store.add(pod("b", node="n2"))
    store.add_indexers({"node": by_node})
    assert keys(store.by_index("node", "n1")) == ["default/a"]
    with pytest.raises(ValueError, match="already exist"):
        store.add_indexers({"node": by_node})


def test_unknown_index_is_a_key_error_naming_the_known_ones():
    store = Indexer(default_indexers())
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.by_index("nope", "x")


def test_index_function_returning_a_string_is_rejected_and_store_unchanged():
    store = Indexer({"bad": lambda o: o["metadata"]["name"]})
    with pytest.raises(TypeError, match="list of strings"):
        store.add(pod("a"))
    assert len(store) == 0


def test_replace_swaps_contents_and_rebuilds_indexes():
    store = Indexer(default_indexers())
    store.add(pod("old", "ns1"))
    store.replace([pod("a", "ns2"), pod("b", "ns2", owner="rs")], "42")
    assert keys(store.list()) == ["ns2/a", "ns2/b"]
    assert store.by_index(NAMESPACE_INDEX, "ns1") == []
    assert keys(store.by_index(NAMESPACE_INDEX, "ns2")) == ["ns2/a", "ns2/b"]
    assert store.resource_version == "42"
    assert "objects=2" in repr(store)


# ---------------------------------------------------------------- stateful: the store against brute force

NAMES = ["a", "b", "c", "d"]
NSES = ["n1", "n2"]
NODES = ["x", "y"]
objects = st.builds(
    lambda name, ns, node, owner, vols: pod(name, ns, node=node, owner=owner, volumes=vols),
    st.sampled_from(NAMES),
    st.sampled_from(NSES),
    st.none() | st.sampled_from(NODES),
    st.none() | st.sampled_from(["r1", "r2"]),
    st.lists(st.sampled_from(["v1", "v2", "v3"]), max_size=3),
)

INDEXERS = {**default_indexers(), "node": by_node, "volume": by_volume}


class IndexerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.store = Indexer({NAMESPACE_INDEX: namespace_index})
        self.indexers = {NAMESPACE_INDEX: namespace_index}
        self.model: dict[str, dict] = {}

    @rule(obj=objects)
    def add(self, obj):
        self.store.add(obj)
        self.model[object_key(obj)] = obj

    @rule(obj=objects)
    def update(self, obj):
        self.store.update(obj)
        self.model[object_key(obj)] = obj

    @rule(obj=objects)
    def delete(self, obj):
        self.store.delete(obj)
        self.model.pop(object_key(obj), None)

    @rule(objs=st.lists(objects, max_size=5))
    def replace(self, objs):
        self.store.replace(objs, "1")
        self.model = {object_key(o): o for o in objs}

    @rule(name=st.sampled_from(sorted(INDEXERS)))
    def add_indexer(self, name):
        if name in self.indexers:
            return
        self.store.add_indexers({name: INDEXERS[name]})
        self.indexers[name] = INDEXERS[name]

    @invariant()
    def store_matches_model(self):
        assert sorted(self.store.list_keys()) == sorted(self.model)
        for k, o in self.model.items():
            assert self.store.get_by_key(k) is o

    @invariant()
    def indexes_match_brute_force(self):
        for name, fn in self.indexers.items():
            expected: dict[str, set[str]] = {}
            for k, o in self.model.items():
                for v in fn(o):
                    expected.setdefault(v, set()).add(k)
            assert sorted(self.store.list_index_func_values(name)) == sorted(expected)
            for v, ks in expected.items():
                assert set(self.store.index_keys(name, v)) == ks
                assert keys(self.store.by_index(name, v)) == sorted(ks)
            # the documented representation: a lone key as itself, two or more as a set
            for entry in self.store._indices[name].values():
                assert type(entry) is str or (type(entry) is set and len(entry) >= 2), entry

    @invariant()
    def index_by_object_matches_brute_force(self):
        for name, fn in self.indexers.items():
            if name == "fussy":  # index() runs the raw function, which raises for some objects
                continue
            for o in self.model.values():
                values = set(fn(o))
                expected = [k for k, other in self.model.items() if values & set(fn(other))]
                assert keys(self.store.index(name, o)) == sorted(expected)


IndexerMachine.TestCase.settings = settings(max_examples=50, stateful_step_count=25, deadline=None)
test_indexer_against_brute_force = IndexerMachine.TestCase


def fussy(obj):
    """An index function with bugs: it raises for node "y" and returns a bare string without a node."""
    node = obj["spec"].get("nodeName")
    if node == "y":
        raise KeyError("nodeName")
    if node is None:
        return "no-node"
    return [node]


def fussy_as_filed(obj):
    """Where a tolerant store files an object under ``fussy``: under no value when it failed."""
    node = obj["spec"].get("nodeName")
    return [node] if node == "x" else []


class TolerantIndexerMachine(IndexerMachine):
    """With ``on_index_error`` (as an informer builds it), an index function failing on an object
    leaves the object stored and filed under no value of that index; everything else stays exact."""

    def __init__(self):
        RuleBasedStateMachine.__init__(self)
        self.reported: list[str] = []
        self.store = Indexer(
            {NAMESPACE_INDEX: namespace_index, "fussy": fussy},
            on_index_error=lambda index, obj, error: self.reported.append(index),
        )
        self.indexers = {NAMESPACE_INDEX: namespace_index, "fussy": fussy_as_filed}
        self.model = {}

    @invariant()
    def only_fussy_failures_are_reported(self):
        assert set(self.reported) <= {"fussy"}


TolerantIndexerMachine.TestCase.settings = settings(
    max_examples=50, stateful_step_count=25, deadline=None
)
test_a_tolerant_indexer_against_brute_force = TolerantIndexerMachine.TestCase


# ---------------------------------------------------------------- concurrency


def test_readers_never_see_a_torn_index_while_writers_churn():
    store = Indexer({**default_indexers(), "node": by_node})
    stop = threading.Event()
    errors: list[str] = []
    reads = [0]

    def writer(seed):
        i = seed
        while not stop.is_set() and not errors:
            i += 1
            name = f"p{i % 50}"
            if i % 7 == 0:
                store.delete(pod(name, f"ns{i % 3}"))
            elif i % 101 == 0:
                store.replace(
                    [
                        pod(f"p{j}", f"ns{j % 3}", node=f"n{j % 4}", owner=f"r{j % 5}")
                        for j in range(20)
                    ],
                    "1",
                )
            else:
                store.update(pod(name, f"ns{i % 3}", node=f"n{i % 4}", owner=f"r{i % 5}"))

    def reader():
        try:
            while not stop.is_set():
                for ns in ("ns0", "ns1", "ns2"):
                    # by_index raises KeyError if an index entry outlived its object
                    for o in store.by_index(NAMESPACE_INDEX, ns):
                        if o["metadata"]["namespace"] != ns:
                            errors.append(f"{object_key(o)} filed under {ns}")
                for node in ("n0", "n1"):
                    for o in store.by_index("node", node):
                        if o["spec"].get("nodeName") != node:
                            errors.append(f"{object_key(o)} filed under node {node}")
                for o in store.list():
                    ref = o["metadata"]["ownerReferences"][0]["uid"]
                    if (
                        object_key(o) not in store.index_keys(OWNER_UID_INDEX, ref)
                        and store.get(o) is o
                    ):
                        errors.append(f"{object_key(o)} missing from owner index")
                reads[0] += 1
        except Exception as e:  # surfaced by the assertion below
            errors.append(repr(e))

    threads = [
        threading.Thread(target=writer, args=(s,), name=f"pyinformers-test-writer-{s}", daemon=True)
        for s in (0, 1000)
    ]
    threads += [
        threading.Thread(target=reader, name=f"pyinformers-test-reader-{r}", daemon=True)
        for r in range(2)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while reads[0] < 300 and time.monotonic() < deadline and not errors:
        stop.wait(0.01)
    stop.set()
    for t in threads:
        t.join(5)
    assert not errors, errors[:5]
    assert reads[0] > 0
    # the final state is consistent too
    for name in ("node", NAMESPACE_INDEX, OWNER_UID_INDEX):
        for v in store.list_index_func_values(name):
            for k in store.index_keys(name, v):
                assert store.get_by_key(k) is not None
