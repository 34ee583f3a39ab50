"""Resource descriptors, the built-in catalog and Resource.from_crd."""

from __future__ import annotations

import pytest
import yaml

from pyinformers import resources
from pyinformers.api import Resource


def test_paths_of_core_group_and_cluster_scoped_resources():
    assert resources.PODS.path() == "/api/v1/pods"
    assert resources.PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert resources.PODS.path("ns", "web-0", "status") == "/api/v1/namespaces/ns/pods/web-0/status"
    assert resources.DEPLOYMENTS.path("ns", "d") == "/apis/apps/v1/namespaces/ns/deployments/d"
    assert resources.NODES.path(name="n1") == "/api/v1/nodes/n1"
    assert resources.LEASES.api_version == "coordination.k8s.io/v1"
    assert str(resources.DEPLOYMENTS) == "apps/v1/deployments"
    assert str(resources.PODS) == "v1/pods"


def test_bad_paths_are_rejected():
    with pytest.raises(ValueError):
        resources.NODES.path("ns")
    with pytest.raises(ValueError):
        resources.PODS.path("ns", subresource="status")
    with pytest.raises(ValueError):
        resources.PODS.path("ns", "a/b")
    with pytest.raises(ValueError):
        Resource("apps", "v1", "", "Deployment")


def test_the_catalog_covers_the_groups_and_looks_up_by_kind():
    groups = {r.group for r in resources.ALL}
    assert {
        "",
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    } <= groups
    assert resources.by_kind("apps/v1", "Deployment") is resources.DEPLOYMENTS
    assert resources.by_kind("v1", "Event") is resources.EVENTS
    assert resources.by_kind("events.k8s.io/v1", "Event") is resources.EVENTS_V1
    assert resources.by_kind("v1", "Nope") is None
    assert len({r for r in resources.ALL}) == len(resources.ALL)  # hashable, distinct


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "foos.samplecontroller.k8s.io"},
    "spec": {
        "group": "samplecontroller.k8s.io",
        "scope": "Namespaced",
        "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
        "versions": [
            {"name": "v1alpha1", "served": True, "storage": False},
            {"name": "v1", "served": True, "storage": True},
            {"name": "v0", "served": False, "storage": False},
        ],
    },
}


def test_from_crd_uses_the_storage_version_by_default_or_the_one_asked_for():
    assert Resource.from_crd(CRD) == Resource("samplecontroller.k8s.io", "v1", "foos", "Foo", True)
    assert Resource.from_crd(CRD, "v1alpha1").version == "v1alpha1"
    with pytest.raises(ValueError, match="not served"):
        Resource.from_crd(CRD, "v0")
    with pytest.raises(ValueError, match="no version"):
        Resource.from_crd(CRD, "v9")


def test_from_crd_without_a_storage_flag_takes_the_first_served_version_and_reads_the_scope():
    crd = yaml.safe_load(yaml.safe_dump(CRD))
    crd["spec"]["scope"] = "Cluster"
    for v in crd["spec"]["versions"]:
        v["storage"] = False
    resource = Resource.from_crd(crd)
    assert resource.version == "v1alpha1" and resource.namespaced is False


def test_from_crd_reads_a_yaml_file_with_several_documents(tmp_path):
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump_all([{"kind": "Namespace", "metadata": {"name": "x"}}, CRD]))
    assert Resource.from_crd(path).plural == "foos"
    assert Resource.from_crd(str(path)).kind == "Foo"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.update(kind="Deployment"),
        lambda c: c["spec"].pop("group"),
        lambda c: c["spec"]["names"].pop("plural"),
        lambda c: c["spec"].update(versions=[]),
        lambda c: c["spec"].update(scope="Galaxy"),
    ],
)
def test_from_crd_rejects_malformed_definitions(mutate):
    crd = yaml.safe_load(yaml.safe_dump(CRD))
    mutate(crd)
    with pytest.raises(ValueError):
        Resource.from_crd(crd)
