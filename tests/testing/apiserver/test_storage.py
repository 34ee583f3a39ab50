"""The API server's storage and patch modules, without HTTP: invariants against small models."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyinformers.testing.apiserver._patch import (
    PatchError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from pyinformers.testing.apiserver._status import StatusError
from pyinformers.testing.apiserver._storage import ChangeType, Store

NAMES = st.sampled_from(["a", "b", "c", "d"])
KEYS = st.sampled_from(["/configmaps", "apps/deployments"])


class StoreMachine(RuleBasedStateMachine):
    """The store against a model: a dict of objects per resourceVersion."""

    def __init__(self) -> None:
        super().__init__()
        self.store = Store(history_limit=30)
        self.model: dict[tuple[str, str], dict] = {}
        self.states = {self.store.current_rv: {}}  # rv -> model snapshot
        self.events: list[tuple[int, str, tuple[str, str]]] = []

    def _record(self, rv: int, kind: str, key: tuple[str, str]) -> None:
        self.states[rv] = dict(self.model)
        self.events.append((rv, kind, key))

    @rule(key=KEYS, name=NAMES, value=st.integers(0, 3))
    def put(self, key, name, value):
        existed = (key, name) in self.model
        obj = self.store.put(
            key, "ns", name, {"metadata": {"name": name, "namespace": "ns"}, "value": value}
        )
        self.model[(key, name)] = obj
        self._record(
            int(obj["metadata"]["resourceVersion"]), "MODIFIED" if existed else "ADDED", (key, name)
        )

    @rule(key=KEYS, name=NAMES)
    def remove(self, key, name):
        final = self.store.remove(key, "ns", name)
        if (key, name) not in self.model:
            assert final is None
            return
        del self.model[(key, name)]
        self._record(int(final["metadata"]["resourceVersion"]), "DELETED", (key, name))

    @precondition(lambda self: len(self.states) > 1)
    @rule(data=st.data())
    def compact(self, data):
        rv = data.draw(st.sampled_from(sorted(self.states)))
        self.store.compact(rv)

    @invariant()
    def current_state_matches(self):
        for key in ("/configmaps", "apps/deployments"):
            expected = [obj for (k, _), obj in sorted(self.model.items()) if k == key]
            assert self.store.objects(key) == expected

    @invariant()
    def every_retained_resource_version_can_be_listed_and_older_ones_are_expired(self):
        compacted = self.store.compacted_rv
        for rv, state in self.states.items():
            for key in ("/configmaps", "apps/deployments"):
                if rv < compacted:
                    for read in (self.store.snapshot, self.store.list_snapshot):
                        with pytest.raises(StatusError) as info:
                            read(key, at_rv=rv)
                        assert info.value.code == 410
                    continue
                names = sorted(n for (k, n) in state if k == key)
                objects, at = self.store.snapshot(key, at_rv=rv)
                assert at == rv
                assert [o["metadata"]["name"] for o in objects] == names
                # List snapshots are cached per rv: later writes and compactions must not change them.
                snap = self.store.list_snapshot(key, at_rv=rv)
                assert snap.rv == rv and [k.rsplit("/", 1)[-1] for k in snap.keys] == names
                assert [o["metadata"]["name"] for o in snap.objects] == names

    @invariant()
    def history_replays_exactly_the_changes_after_a_resource_version(self):
        compacted = self.store.compacted_rv
        changes = self.store.changes_since(compacted)
        expected = [(rv, kind, key) for rv, kind, key in self.events if rv > compacted]
        assert [(c.rv, c.type.value, (c.storage_key, c.name)) for c in changes] == expected
        assert all(c.obj["metadata"]["resourceVersion"] == str(c.rv) for c in changes)


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)


def test_listeners_see_changes_in_resource_version_order():
    store = Store()
    seen = []
    store.add_listener(lambda change: seen.append((change.rv, change.type)))
    store.put("/configmaps", "ns", "a", {"metadata": {"name": "a"}})
    store.put("/configmaps", "ns", "a", {"metadata": {"name": "a"}, "data": {}})
    store.remove("/configmaps", "ns", "a")
    assert [t for _, t in seen] == [ChangeType.ADDED, ChangeType.MODIFIED, ChangeType.DELETED]
    assert [rv for rv, _ in seen] == sorted(rv for rv, _ in seen)


def test_automatic_compaction_keeps_between_n_and_2n_changes():
    store = Store(compact_every=5)
    for i in range(23):
        store.put("/configmaps", "", f"o{i}", {"metadata": {"name": f"o{i}"}})
        kept = store.current_rv - store.compacted_rv
        assert kept <= 10
        if i >= 9:
            assert kept >= 5


def test_a_list_snapshot_is_sorted_by_list_key_and_shared_by_the_pages_of_one_list():
    store = Store()
    for ns, name in (("team", "x"), ("team-b", "x"), ("team", "a")):
        store.put("/configmaps", ns, name, {"metadata": {"name": name, "namespace": ns}})
    snap = store.list_snapshot("/configmaps")
    assert snap.keys == ["team-b/x", "team/a", "team/x"]  # byte order, as continue tokens compare
    store.remove("/configmaps", "team", "a")
    assert store.list_snapshot("/configmaps", at_rv=snap.rv) is snap
    assert store.list_snapshot("/configmaps").keys == ["team-b/x", "team/x"]
    assert store.list_snapshot("/configmaps", "team", at_rv=snap.rv).keys == ["team/a", "team/x"]
    store.compact()
    with pytest.raises(StatusError) as info:
        store.list_snapshot("/configmaps", at_rv=snap.rv)
    assert info.value.code == 410


def test_a_too_large_resource_version_is_a_504():
    store = Store()
    with pytest.raises(StatusError) as info:
        store.snapshot("/configmaps", at_rv=store.current_rv + 10)
    assert info.value.code == 504


# -- patches --------------------------------------------------------------------------------


def test_merge_patch_follows_rfc_7386():
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "l": [3], "n": {"x": None}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "l": [3], "n": {}}
    assert target == {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}  # inputs untouched


def test_json_patch_follows_rfc_6902():
    doc = {"foo": ["bar", "baz"], "a/b": 1, "m~n": 2}
    patched = json_patch(
        doc,
        [
            {"op": "add", "path": "/foo/1", "value": "qux"},
            {"op": "add", "path": "/foo/-", "value": "end"},
            {"op": "remove", "path": "/a~1b"},
            {"op": "replace", "path": "/m~0n", "value": 3},
            {"op": "copy", "from": "/foo/0", "path": "/first"},
            {"op": "move", "from": "/first", "path": "/moved"},
            {"op": "test", "path": "/moved", "value": "bar"},
        ],
    )
    assert patched == {"foo": ["bar", "qux", "baz", "end"], "m~n": 3, "moved": "bar"}
    assert doc == {"foo": ["bar", "baz"], "a/b": 1, "m~n": 2}


@pytest.mark.parametrize(
    "ops",
    [
        {"op": "add"},
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/x", "value": 1}],
        [{"op": "add", "path": "/list/9", "value": 1}],
        [{"op": "test", "path": "/list/0", "value": 2}],
        [{"op": "frobnicate", "path": "/list"}],
        [{"op": "add", "path": "no-slash", "value": 1}],
        [{"op": "move", "from": "/list", "path": "/list/0"}],
    ],
)
def test_bad_json_patches_raise_patch_error_and_change_nothing(ops):
    doc = {"list": [1]}
    with pytest.raises(PatchError):
        json_patch(doc, ops)
    assert doc == {"list": [1]}


def _pod(*containers):
    return {"spec": {"template": {"spec": {"containers": [dict(c) for c in containers]}}}}


def _containers(doc):
    return [(c["name"], c.get("image")) for c in doc["spec"]["template"]["spec"]["containers"]]


APP = {"name": "app", "image": "nginx:1.25"}
SIDECAR = {"name": "sidecar", "image": "busybox:1.36"}


def test_strategic_merge_patch_merges_lists_by_key_as_the_recorded_server_does():
    base = _pod(APP, SIDECAR)
    merged = strategic_merge_patch(base, _pod({"name": "app", "image": "nginx:1.26"}))
    assert _containers(merged) == [("app", "nginx:1.26"), ("sidecar", "busybox:1.36")]
    added = strategic_merge_patch(merged, _pod({"name": "extra", "image": "busybox:1.36"}))
    assert _containers(added) == [
        ("extra", "busybox:1.36"),
        ("app", "nginx:1.26"),
        ("sidecar", "busybox:1.36"),
    ]
    deleted = strategic_merge_patch(added, _pod({"name": "extra", "$patch": "delete"}))
    assert _containers(deleted) == [("app", "nginx:1.26"), ("sidecar", "busybox:1.36")]
    # what `kubectl set image` sends
    kubectl = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}],
                    "containers": [{"image": "nginx:1.27", "name": "app"}],
                }
            }
        }
    }
    assert _containers(strategic_merge_patch(deleted, kubectl)) == [
        ("app", "nginx:1.27"),
        ("sidecar", "busybox:1.36"),
    ]
    replaced = strategic_merge_patch(
        deleted, _pod({"name": "only", "image": "x"}, {"$patch": "replace"})
    )
    assert _containers(replaced) == [("only", "x")]
    assert strategic_merge_patch({"l": [1, 2], "m": {"a": 1}}, {"l": [3], "m": {"b": 2}}) == {
        "l": [3],
        "m": {"a": 1, "b": 2},
    }
    assert strategic_merge_patch({"spec": {"a": 1}}, {"spec": {"$patch": "replace", "b": 2}}) == {
        "spec": {"b": 2}
    }
    assert strategic_merge_patch(
        {"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": ["b", "a"]}}
    ) == {"metadata": {"finalizers": ["a", "b"]}}
    assert strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
    ) == {"metadata": {"finalizers": ["b"]}}
    with pytest.raises(
        PatchError, match=r"unknown patch type: bogus in map: map\[\$patch:bogus name:app\]"
    ):
        strategic_merge_patch(base, _pod({"name": "app", "$patch": "bogus"}))


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True),
)
def test_a_strategic_merge_of_containers_keeps_one_per_name_and_every_patched_one(old, new):
    base = _pod(*({"name": n, "image": "old"} for n in old))
    merged = strategic_merge_patch(base, _pod(*({"name": n, "image": "new"} for n in new)))
    names = [n for n, _ in _containers(merged)]
    assert sorted(names) == sorted(set(old) | set(new))
    assert all(image == "new" for n, image in _containers(merged) if n in new)
    assert _containers(base) == [(n, "old") for n in old]  # the input is not mutated


@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=3),
        lambda c: st.dictionaries(st.text(max_size=3), c, max_size=3),
        max_leaves=10,
    )
)
def test_a_merge_patch_onto_nothing_yields_the_patch_without_nulls(doc):
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if v is not None}
        return value

    assert merge_patch(None, doc) == strip(doc)
