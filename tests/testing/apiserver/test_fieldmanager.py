"""The field manager against a tiny reference model of field ownership (hypothesis), and by example.

The model keeps, for a ConfigMap's ``data`` and ``metadata.labels``, each key's
value and the set of managers owning it, and the keys each applier applied
last. Apply: a key whose value would change and that another manager owns is a
conflict (nothing changes) unless forced, which takes it over; a key applied
with its current value is shared; a key the applier applied before and drops
goes when nobody else owns it. Update: the writer owns what it added or
changed, and removed keys lose their owners.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyinformers.testing.apiserver._fieldmanager import (
    ApplyConflicts,
    apply,
    decode_managed_fields,
    encode_managed_fields,
    update,
)
from pyinformers.testing.apiserver._fieldpath import from_fields_v1, path_string, to_fields_v1
from pyinformers.testing.apiserver._schema import shape_for_builtin, shape_for_crd

CONFIGMAP = shape_for_builtin("ConfigMap")
DEPLOYMENT = shape_for_builtin("Deployment")
NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:01:00Z"

MANAGERS = ("alpha", "beta", "gamma")
KEYS = st.sampled_from([("data", k) for k in "abcd"] + [("labels", k) for k in "xy"])
VALUES = st.sampled_from(["1", "2"])
CONFIGS = st.dictionaries(KEYS, VALUES, max_size=4)


def _object(fields: dict) -> dict:
    obj: dict = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"},
    }
    for (where, key), value in fields.items():
        target = (
            obj["metadata"].setdefault("labels", {})
            if where == "labels"
            else obj.setdefault("data", {})
        )
        target[key] = value
    return obj


def _fields(obj: dict) -> dict:
    out = {("data", k): v for k, v in (obj.get("data") or {}).items()}
    out.update(
        {("labels", k): v for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items()}
    )
    return out


def _owned_keys(entry_fields) -> set:
    keys = set()
    for path in entry_fields:
        if path[0] == "f:data" and len(path) == 2:
            keys.add(("data", path[1][2:]))
        elif path[:2] == ("f:metadata", "f:labels") and len(path) == 3:
            keys.add(("labels", path[2][2:]))
        elif path not in (("f:data",), ("f:metadata", "f:labels")):  # an Update's maps it created
            raise AssertionError(f"unexpected owned path {path}")
    return keys


class Ownership(RuleBasedStateMachine):
    """The field manager and the model, step by step: same object, same owners."""

    def __init__(self) -> None:
        super().__init__()
        self.obj: dict | None = None
        self.entries: list = []
        self.values: dict = {}
        self.owners: dict = {}  # key -> {(manager, operation)}; an applier's last applied keys are those it owns

    @rule(manager=st.sampled_from(MANAGERS), config=CONFIGS, force=st.booleans())
    def apply_config(self, manager: str, config: dict, force: bool) -> None:
        me = (manager, "Apply")
        conflicts = {
            k
            for k, v in config.items()
            if self.values.get(k) not in (None, v) and self.owners.get(k, set()) - {me}
        }
        try:
            obj, entries = apply(
                self.obj,
                _object(config),
                self.entries,
                manager=manager,
                force=force,
                api_version="v1",
                shape=CONFIGMAP,
                now=NOW,
            )
        except ApplyConflicts as exc:
            assert conflicts and not force
            reported = {
                (p[0][2:], p[-1][2:]) if p[0] == "f:data" else ("labels", p[-1][2:])
                for _, p in exc.conflicts
            }
            assert reported == conflicts
            return
        assert force or not conflicts
        for k, v in config.items():
            if self.values.get(k) != v:
                self.values[k] = v
                self.owners[k] = {me}
            else:
                self.owners.setdefault(k, set()).add(me)
        for k in [k for k, owners in self.owners.items() if me in owners and k not in config]:
            self.owners[k].discard(me)
            if not self.owners[k]:
                del self.owners[k]
                del self.values[k]
        self.obj, self.entries = obj, entries

    @rule(manager=st.sampled_from(MANAGERS), key=KEYS, value=st.one_of(st.none(), VALUES))
    def update_one_key(self, manager: str, key: tuple, value: str | None) -> None:
        me = (manager, "Update")
        fields = dict(self.values)
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
        new = _object(fields)
        self.entries = update(
            self.obj, new, self.entries, manager=manager, api_version="v1", shape=CONFIGMAP, now=NOW
        )
        self.obj = new
        if value is None:
            if key in self.values:
                del self.values[key]
                del self.owners[key]
        elif self.values.get(key) != value:
            self.values[key] = value
            self.owners[key] = {me}

    @invariant()
    def object_and_owners_match_the_model(self) -> None:
        if self.obj is None:
            return
        assert _fields(self.obj) == self.values
        owners: dict = {}
        for entry in self.entries:
            for key in _owned_keys(entry.fields):
                owners.setdefault(key, set()).add((entry.manager, entry.operation))
        model = {k: v for k, v in self.owners.items() if v}
        assert owners == model

    @invariant()
    def managed_fields_round_trip(self) -> None:
        encoded = encode_managed_fields(self.entries)
        assert [(e.manager, e.fields) for e in decode_managed_fields(encoded)] == [
            (e.manager, e.fields)
            for e in sorted(self.entries, key=lambda e: (e.operation, e.time or "", e.manager))
        ]


Ownership.TestCase.settings = settings(max_examples=150, stateful_step_count=25, deadline=None)
test_the_field_manager_keeps_ownership_as_the_reference_model_does = Ownership.TestCase


def _deployment(containers: list, **spec) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": dict(spec, template={"spec": {"containers": containers}}),
    }


def test_two_appliers_containers_merge_by_name_in_the_live_order():
    obj, entries = apply(
        None,
        _deployment([{"name": "app", "image": "app:1"}]),
        [],
        manager="a",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=NOW,
    )
    obj, entries = apply(
        obj,
        _deployment([{"name": "sidecar", "image": "side:1"}]),
        entries,
        manager="b",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=NOW,
    )
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["app", "sidecar"]
    owned = {e.manager: to_fields_v1(e.fields) for e in entries}
    assert owned["b"] == {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}
                }
            }
        }
    }


def test_a_conflict_on_one_containers_image_names_the_path():
    obj, entries = apply(
        None,
        _deployment([{"name": "app", "image": "app:1"}]),
        [],
        manager="a",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=NOW,
    )
    with pytest.raises(ApplyConflicts) as caught:
        apply(
            obj,
            _deployment([{"name": "app", "image": "app:2"}]),
            entries,
            manager="b",
            force=False,
            api_version="apps/v1",
            shape=DEPLOYMENT,
            now=NOW,
        )
    assert (
        caught.value.message
        == 'Apply failed with 1 conflict: conflict with "a": .spec.template.spec.containers[name="app"].image'
    )


def test_container_ports_are_keyed_by_port_and_the_defaulted_protocol():
    _, entries = apply(
        None,
        _deployment([{"name": "app", "ports": [{"containerPort": 80}]}]),
        [],
        manager="a",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=NOW,
    )
    (entry,) = entries
    assert (
        "f:spec",
        "f:template",
        "f:spec",
        "f:containers",
        'k:{"name":"app"}',
        "f:ports",
        'k:{"containerPort":80,"protocol":"TCP"}',
    ) in entry.fields


def test_releasing_replicas_leaves_the_value_to_whoever_writes_it_next():
    obj, entries = apply(
        None,
        _deployment([{"name": "app"}], replicas=3),
        [],
        manager="a",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=NOW,
    )
    obj, entries = apply(
        obj,
        _deployment([{"name": "app"}]),
        entries,
        manager="a",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=LATER,
    )
    assert "replicas" not in obj["spec"]
    assert entries[0].time == LATER


def test_a_no_op_apply_keeps_the_object_and_the_entry_time():
    obj, entries = apply(
        None,
        _object({("data", "a"): "1"}),
        [],
        manager="a",
        force=False,
        api_version="v1",
        shape=CONFIGMAP,
        now=NOW,
    )
    again, entries2 = apply(
        obj,
        _object({("data", "a"): "1"}),
        entries,
        manager="a",
        force=False,
        api_version="v1",
        shape=CONFIGMAP,
        now=LATER,
    )
    assert again == obj and entries2 == entries


def test_custom_resources_follow_their_schemas_list_types():
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "hosts": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set",
                    },
                    "args": {"type": "array", "items": {"type": "string"}},
                    "routes": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["path"],
                        "items": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}, "to": {"type": "string"}},
                        },
                    },
                    "settings": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"},
                    },
                },
            }
        },
    }
    shape = shape_for_crd(schema)
    cr = {
        "apiVersion": "x.io/v1",
        "kind": "R",
        "metadata": {"name": "r"},
        "spec": {
            "hosts": ["a"],
            "args": ["x"],
            "routes": [{"path": "/", "to": "s"}],
            "settings": {"k": "v"},
        },
    }
    _, entries = apply(
        None, cr, [], manager="a", force=False, api_version="x.io/v1", shape=shape, now=NOW
    )
    assert to_fields_v1(entries[0].fields) == {
        "f:spec": {
            "f:args": {},
            "f:hosts": {'v:"a"': {}},
            "f:routes": {'k:{"path":"/"}': {".": {}, "f:path": {}, "f:to": {}}},
            "f:settings": {},
        }
    }


def test_an_update_on_create_owns_new_maps_with_a_dot():
    entries = update(
        None,
        _object({("data", "a"): "1"}),
        [],
        manager="kubectl",
        api_version="v1",
        shape=CONFIGMAP,
        now=NOW,
    )
    assert to_fields_v1(entries[0].fields) == {"f:data": {".": {}, "f:a": {}}}


def test_fields_v1_round_trips_and_paths_print_as_the_server_prints_them():
    fields = frozenset(
        {
            ("f:spec",),
            ("f:spec", "f:replicas"),
            ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'),
        }
    )
    assert from_fields_v1(to_fields_v1(fields)) == fields
    assert (
        path_string(("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'))
        == '.spec.ports[port=80,protocol="TCP"]'
    )
    assert path_string(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'


def test_a_list_item_without_a_key_field_is_keyed_by_the_others():
    _, entries = apply(
        None,
        _deployment([{"image": "x"}]),
        [],
        manager="a",
        force=False,
        api_version="apps/v1",
        shape=DEPLOYMENT,
        now=NOW,
    )
    assert ("f:spec", "f:template", "f:spec", "f:containers", "k:{}", "f:image") in entries[
        0
    ].fields
