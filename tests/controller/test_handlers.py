"""Handlers: which keys an event wakes, with predicates, tombstones and owner moves."""

from __future__ import annotations

import logging

import pytest

from pyinformers.controller import (
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    generation_changed,
)


class Tombstone:
    """A stand-in for cache.delta_fifo.DeletedFinalStateUnknown (same two fields)."""

    def __init__(self, key, obj):
        self.key = key
        self.obj = obj


class Recorder:
    def __init__(self):
        self.keys = []

    def add(self, key):
        self.keys.append(key)


def ref(kind="Owner", name="o1", api_version="example.com/v1", controller=True, uid="u1"):
    r = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if controller is not None:
        r["controller"] = controller
    return r


def child(name="c", namespace="ns", refs=(), rv="1", generation=None):
    md = {"name": name, "resourceVersion": rv}
    if namespace:
        md["namespace"] = namespace
    if refs:
        md["ownerReferences"] = list(refs)
    if generation is not None:
        md["generation"] = generation
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}


def bound(handler, predicates=()):
    q = Recorder()
    return handler.bind(q, predicates), q


# -- EnqueueForObject ------------------------------------------------------------------


def test_enqueue_for_object_adds_the_object_key_on_every_event():
    h, q = bound(EnqueueForObject())
    c = child()
    h.on_add(c, True)
    h.on_update(c, child(rv="2"))
    h.on_delete(c)
    h.on_add(child(name="node-1", namespace=None), False)
    assert q.keys == ["ns/c", "ns/c", "ns/c", "node-1"]


def test_enqueue_for_object_uses_the_tombstone_key_even_without_an_object():
    h, q = bound(EnqueueForObject())
    h.on_delete(Tombstone("ns/gone", child(name="gone")))
    h.on_delete(Tombstone("ns/unknown", None))
    assert q.keys == ["ns/gone", "ns/unknown"]


def test_enqueue_for_object_with_predicates_filters():
    h, q = bound(EnqueueForObject(), [generation_changed])
    h.on_update(child(rv="1", generation=1), child(rv="2", generation=1))
    h.on_update(child(rv="2", generation=1), child(rv="3", generation=2))
    assert q.keys == ["ns/c"]


def test_an_object_without_a_name_is_logged_and_dropped_not_raised(caplog):
    for predicates in ((), [lambda e: True]):
        h, q = bound(EnqueueForObject(), predicates)
        with caplog.at_level(logging.ERROR, logger="pyinformers.controller._handlers"):
            h.on_add({"metadata": {}}, False)
        assert q.keys == []
    assert len(caplog.records) == 2


# -- EnqueueForOwner -------------------------------------------------------------------


def test_enqueue_for_owner_maps_the_controller_reference_to_the_owner_key():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_add(child(refs=[ref(name="o1")]), False)
    assert q.keys == ["ns/o1"]


def test_enqueue_for_owner_ignores_other_kinds_groups_and_non_controller_refs():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_add(child(refs=[ref(kind="Other")]), False)
    h.on_add(child(refs=[ref(api_version="other.io/v1")]), False)
    h.on_add(child(refs=[ref(controller=False)]), False)
    h.on_add(child(refs=[ref(controller=None)]), False)
    h.on_add(child(), False)
    assert q.keys == []


def test_enqueue_for_owner_matches_any_version_of_the_group():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_add(child(refs=[ref(api_version="example.com/v1beta1")]), False)
    assert q.keys == ["ns/o1"]


def test_enqueue_for_owner_core_group_is_the_empty_string():
    h, q = bound(EnqueueForOwner("ConfigMap"))
    h.on_add(child(refs=[ref(kind="ConfigMap", api_version="v1", name="cm")]), False)
    assert q.keys == ["ns/cm"]


def test_enqueue_for_owner_enqueues_only_the_first_controller_reference():
    # Two references claim to be the controller (the API server refuses that, a hand-made object
    # may not): only the first counts, the one controller_of() names (issue 12, item 8).
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_add(child(refs=[ref(name="first"), ref(name="second")]), False)
    assert q.keys == ["ns/first"]
    h2, q2 = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h2.on_add(child(refs=[ref(name="x", kind="Other"), ref(name="second")]), False)
    assert q2.keys == []  # the controller is an Other, not an Owner


def test_enqueue_for_owner_without_controller_only_takes_every_matching_reference():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com", controller_only=False))
    h.on_add(
        child(refs=[ref(name="a", controller=False), ref(name="b"), ref(name="c", kind="X")]), False
    )
    assert q.keys == ["ns/a", "ns/b"]


def test_enqueue_for_owner_wakes_old_and_new_owner_when_the_owner_changes():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_update(child(rv="1", refs=[ref(name="old")]), child(rv="2", refs=[ref(name="new")]))
    assert q.keys == ["ns/new", "ns/old"]


def test_enqueue_for_owner_wakes_the_old_owner_when_the_reference_is_dropped():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_update(child(rv="1", refs=[ref(name="old")]), child(rv="2"))
    assert q.keys == ["ns/old"]


def test_enqueue_for_owner_enqueues_one_owner_once_per_update():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_update(child(rv="1", refs=[ref()]), child(rv="2", refs=[ref()]))
    assert q.keys == ["ns/o1"]


def test_enqueue_for_owner_handles_deleted_objects_and_tombstones():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_delete(child(refs=[ref(name="a")]))
    h.on_delete(Tombstone("ns/c", child(refs=[ref(name="b")])))
    h.on_delete(Tombstone("ns/c", None))
    assert q.keys == ["ns/a", "ns/b"]


def test_enqueue_for_owner_cluster_scoped_owner_keys_are_names():
    h, q = bound(EnqueueForOwner("Node", owner_namespaced=False))
    h.on_add(child(refs=[ref(kind="Node", api_version="v1", name="n1")]), False)
    assert q.keys == ["n1"]


def test_enqueue_for_owner_takes_group_and_scope_from_a_resource():
    from pyinformers.api._resource import Resource

    nodes = Resource("", "v1", "nodes", "Node", namespaced=False)
    h, q = bound(EnqueueForOwner(nodes))
    h.on_add(child(refs=[ref(kind="Node", api_version="v1", name="n1")]), False)
    assert q.keys == ["n1"]
    with pytest.raises(ValueError):
        EnqueueForOwner(nodes, owner_group="apps")


def test_enqueue_for_owner_ignores_a_namespaced_owner_of_a_cluster_scoped_child():
    h, q = bound(EnqueueForOwner("Owner", owner_group="example.com"))
    h.on_add(child(namespace=None, refs=[ref()]), False)
    assert q.keys == []


def test_enqueue_for_owner_rejects_bad_configuration():
    with pytest.raises(ValueError):
        EnqueueForOwner("")
    with pytest.raises(ValueError):
        EnqueueForOwner("Deployment", owner_group="apps/v1")
    with pytest.raises(TypeError):
        EnqueueForOwner(42)


# -- EnqueueMapped ---------------------------------------------------------------------


def test_enqueue_mapped_adds_what_the_function_returns():
    h, q = bound(EnqueueMapped(lambda o: [f"ns/{o['metadata']['name']}-a", "ns/b"]))
    h.on_add(child(name="x"), False)
    assert q.keys == ["ns/x-a", "ns/b"]


def test_enqueue_mapped_accepts_a_single_key_or_none():
    h, q = bound(EnqueueMapped(lambda o: None if o["metadata"]["name"] == "skip" else "ns/one"))
    h.on_add(child(name="skip"), False)
    h.on_add(child(name="x"), False)
    assert q.keys == ["ns/one"]


def test_enqueue_mapped_maps_old_and_new_on_update_and_the_final_state_on_delete():
    h, q = bound(EnqueueMapped(lambda o: [o["metadata"].get("labels", {}).get("target", "none")]))
    old = child(rv="1")
    old["metadata"]["labels"] = {"target": "ns/t1"}
    new = child(rv="2")
    new["metadata"]["labels"] = {"target": "ns/t2"}
    h.on_update(old, new)
    h.on_delete(Tombstone("ns/c", new))
    assert q.keys == ["ns/t2", "ns/t1", "ns/t2"]


def test_enqueue_mapped_resync_maps_once():
    calls = []
    h, q = bound(EnqueueMapped(lambda o: calls.append(o) or ["k"]))
    c = child()
    h.on_update(c, c)
    assert len(calls) == 1 and q.keys == ["k"]


def test_a_mapping_function_that_raises_is_logged_and_the_event_dropped(caplog):
    def boom(o):
        raise RuntimeError("boom")

    h, q = bound(EnqueueMapped(boom))
    with caplog.at_level(logging.ERROR, logger="pyinformers.controller._handlers"):
        h.on_add(child(), False)
    assert q.keys == []
    assert "boom" in caplog.text


def test_a_non_string_key_is_an_error():
    h, q = bound(EnqueueMapped(lambda o: [("ns", "x")]))
    h.on_add(child(), False)
    assert q.keys == []


def test_bind_rejects_a_queue_without_add_and_non_callable_predicates():
    with pytest.raises(TypeError):
        EnqueueForObject().bind(object())
    with pytest.raises(TypeError):
        EnqueueForObject().bind(Recorder(), ["not callable"])
    with pytest.raises(TypeError):
        EnqueueMapped("ns/x")
