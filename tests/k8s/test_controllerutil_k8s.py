"""create_or_update, create_or_patch, finalize and the in-place status write, on either server."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyinformers.api import Conflict, NotFound, ResourceClient
from pyinformers.api.meta import deep_copy
from pyinformers.controller import (
    ObjectBeingDeleted,
    OperationResult,
    Result,
    create_or_patch,
    create_or_update,
    finalize,
    install_crd,
    update_status,
)
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually
from samples.sample_controller.controller import FOOS

pytestmark = pytest.mark.timeout(180)

CRD = (
    Path(__file__).resolve().parents[2] / "samples" / "sample_controller" / "artifacts" / "crd.yaml"
)
F = "example.com/cleanup"


@pytest.fixture
def configmaps(k8s):
    return ResourceClient(k8s.api_client(), CONFIGMAPS)


def skeleton(ns, name="cfg"):
    return {"metadata": {"name": name, "namespace": ns}}


def set_data(value):
    def mutate(obj):
        obj["data"] = {"key": value}

    return mutate


def test_create_or_update_creates_then_writes_nothing_then_updates(k8s, configmaps):
    ns = k8s.namespace
    obj = skeleton(ns)
    assert create_or_update(configmaps, obj, set_data("a")) is OperationResult.CREATED
    first_rv = obj["metadata"]["resourceVersion"]
    again = skeleton(ns)
    assert create_or_update(configmaps, again, set_data("a")) is OperationResult.UNCHANGED
    assert configmaps.get("cfg", ns)["metadata"]["resourceVersion"] == first_rv  # no write at all
    changed = skeleton(ns)
    assert create_or_update(configmaps, changed, set_data("b")) is OperationResult.UPDATED
    assert changed["data"] == {"key": "b"} and changed["metadata"]["resourceVersion"] != first_rv


def test_create_or_patch_patches_only_what_the_mutate_changed(k8s, configmaps):
    ns = k8s.namespace
    configmaps.create(
        {"metadata": {"name": "cfg", "namespace": ns, "labels": {"keep": "me"}}, "data": {"x": "1"}}
    )

    def mutate(obj):
        obj["data"]["y"] = "2"

    obj = skeleton(ns)
    assert create_or_patch(configmaps, obj, mutate) is OperationResult.UPDATED
    stored = configmaps.get("cfg", ns)
    assert stored["data"] == {"x": "1", "y": "2"} and stored["metadata"]["labels"] == {"keep": "me"}
    assert create_or_patch(configmaps, skeleton(ns), mutate) is OperationResult.UNCHANGED


def test_a_mutate_that_renames_the_object_is_refused_and_nothing_is_written(k8s, configmaps):
    ns = k8s.namespace

    def rename(obj):
        obj["metadata"]["name"] = "other"

    with pytest.raises(ValueError, match="changed metadata.name from 'cfg' to 'other'"):
        create_or_patch(configmaps, skeleton(ns), rename)
    with pytest.raises(NotFound):
        configmaps.get("cfg", ns)
    with pytest.raises(NotFound):
        configmaps.get("other", ns)

    def move(obj):
        obj["metadata"]["namespace"] = "kube-system"

    with pytest.raises(ValueError, match="changed metadata.namespace"):
        create_or_update(configmaps, skeleton(ns), move)


def test_an_object_being_deleted_is_not_written_by_create_or_patch(k8s, configmaps):
    ns = k8s.namespace
    configmaps.create(
        {"metadata": {"name": "cfg", "namespace": ns, "finalizers": [F]}, "data": {"x": "1"}}
    )
    configmaps.delete("cfg", ns)
    with pytest.raises(ObjectBeingDeleted, match="is being deleted"):
        create_or_patch(configmaps, skeleton(ns), set_data("b"))
    stored = configmaps.get("cfg", ns)
    assert stored["data"] == {"x": "1"}
    configmaps.patch("cfg", {"metadata": {"finalizers": None}}, ns)


def test_finalize_adds_the_finalizer_before_apply_and_removes_it_after_cleanup(k8s, configmaps):
    ns = k8s.namespace
    created = configmaps.create({"metadata": {"name": "cfg", "namespace": ns}})
    seen = []

    def apply(obj):
        seen.append(("apply", list(obj["metadata"].get("finalizers") or [])))
        return Result(requeue_after=60)

    def cleanup(obj):
        seen.append(("cleanup", list(obj["metadata"]["finalizers"])))

    assert finalize(configmaps, F, created, apply=apply, cleanup=cleanup) == Result(
        requeue_after=60
    )
    assert seen == [
        ("apply", [F])
    ]  # apply ran on the stored object, finalizer already on the server
    stored = configmaps.get("cfg", ns)
    assert stored["metadata"]["finalizers"] == [F]
    finalize(configmaps, F, stored, apply=apply, cleanup=cleanup)
    assert (
        configmaps.get("cfg", ns)["metadata"]["resourceVersion"]
        == stored["metadata"]["resourceVersion"]
    )

    configmaps.delete("cfg", ns)
    deleting = configmaps.get("cfg", ns)
    assert finalize(configmaps, F, deleting, apply=apply, cleanup=cleanup) is None
    assert seen[-1] == ("cleanup", [F])
    eventually(
        lambda: _gone(configmaps, ns), 30, what="the ConfigMap gone once its finalizer was removed"
    )


def _gone(client, ns):
    try:
        client.get("cfg", ns)
    except NotFound:
        return True
    return False


def test_a_cleanup_that_fails_or_is_not_done_keeps_the_finalizer(k8s, configmaps):
    ns = k8s.namespace
    configmaps.create({"metadata": {"name": "cfg", "namespace": ns, "finalizers": [F]}})
    configmaps.delete("cfg", ns)
    deleting = configmaps.get("cfg", ns)

    def failing(obj):
        raise RuntimeError("the cloud said no")

    with pytest.raises(RuntimeError):
        finalize(configmaps, F, deleting, apply=lambda o: None, cleanup=failing)
    assert finalize(
        configmaps, F, deleting, apply=lambda o: None, cleanup=lambda o: Result(requeue_after=5)
    ) == Result(requeue_after=5)
    assert configmaps.get("cfg", ns)["metadata"]["finalizers"] == [F]
    configmaps.patch("cfg", {"metadata": {"finalizers": None}}, ns)


def test_a_finalizer_change_from_a_stale_read_is_a_conflict_and_writes_nothing(k8s, configmaps):
    ns = k8s.namespace
    stale = configmaps.create({"metadata": {"name": "cfg", "namespace": ns}})
    fresh = deep_copy(stale)
    fresh["data"] = {"changed": "meanwhile"}
    configmaps.replace(fresh)
    with pytest.raises(Conflict):
        finalize(configmaps, F, stale, apply=lambda o: None, cleanup=lambda o: None)
    assert not configmaps.get("cfg", ns)["metadata"].get("finalizers")


def test_a_bad_finalizer_name_is_refused_before_any_write(k8s, configmaps):
    created = configmaps.create({"metadata": {"name": "cfg", "namespace": k8s.namespace}})
    with pytest.raises(ValueError, match="not domain-qualified"):
        finalize(configmaps, "cleanup", created, apply=lambda o: None, cleanup=lambda o: None)


def test_two_status_writes_in_one_reconcile_do_not_conflict_with_each_other(k8s):
    api_client = k8s.api_client()
    install_crd(api_client, CRD)
    foos = ResourceClient(api_client, FOOS)
    foo = foos.create(
        {
            "metadata": {"name": "f", "namespace": k8s.namespace},
            "spec": {"deploymentName": "d", "replicas": 1},
        }
    )
    foo["status"] = {"availableReplicas": 1}
    update_status(foos, foo)
    foo["status"] = {"availableReplicas": 2}
    update_status(foos, foo)  # carries the resourceVersion the first write stored
    assert foos.get("f", k8s.namespace)["status"] == {"availableReplicas": 2}


def test_create_or_patch_writes_a_status_change_through_the_status_subresource(k8s):
    api_client = k8s.api_client()
    install_crd(api_client, CRD)
    foos = ResourceClient(api_client, FOOS)
    ns = k8s.namespace

    def mutate(obj):
        obj["spec"] = {"deploymentName": "d", "replicas": 1}
        obj["status"] = {"availableReplicas": 1}

    obj = skeleton(ns, "f")
    assert create_or_patch(foos, obj, mutate) is OperationResult.CREATED
    assert foos.get("f", ns)["status"] == {"availableReplicas": 1}

    def status_only(obj):
        obj["status"]["availableReplicas"] = 3

    assert (
        create_or_patch(foos, skeleton(ns, "f"), status_only) is OperationResult.UPDATED_STATUS_ONLY
    )

    def both(obj):
        obj["spec"]["replicas"] = 2
        obj["status"]["availableReplicas"] = 2

    assert create_or_patch(foos, skeleton(ns, "f"), both) is OperationResult.UPDATED_STATUS
    stored = foos.get("f", ns)
    assert stored["spec"]["replicas"] == 2 and stored["status"] == {"availableReplicas": 2}
