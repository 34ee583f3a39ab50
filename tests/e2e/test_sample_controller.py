"""The sample-controller port, end to end against the in-process API server over HTTP."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pyinformers.api import Invalid, Resource, ResourceClient, meta
from pyinformers.resources import DEPLOYMENTS
from samples._support import load_yaml
from samples.sample_controller import (
    ARTIFACTS,
    CONTROLLER_AGENT_NAME,
    ERR_RESOURCE_EXISTS,
    FOOS,
    MESSAGE_RESOURCE_SYNCED,
    SUCCESS_SYNCED,
    FooController,
    new_deployment,
)
from tests.support.sample_harness import TIMEOUT, SampleHarness, running_sample, workload_client
from tests.support.samples_cli import run_operator_until_it_acts

NS = "default"


@pytest.fixture
def api_client(k8s):
    return workload_client(k8s)


@dataclasses.dataclass
class Harness(SampleHarness):
    foos: ResourceClient
    deployments: ResourceClient

    def foo(self, name: str = "example-foo"):
        return self.controller.foos.get(name, namespace=self.ns)

    def deployment(self, name: str = "example-foo"):
        return self.controller.deployments.get(name, namespace=self.ns)

    def describe(self) -> str:
        return f"foo={self.foo()} deployment={self.deployment()}"

    def create_foo(
        self, name: str = "example-foo", deployment_name: str = "example-foo", replicas: int = 1
    ) -> dict:
        return self.foos.create(
            {
                "apiVersion": FOOS.api_version,
                "kind": FOOS.kind,
                "metadata": {"name": name},
                "spec": {"deploymentName": deployment_name, "replicas": replicas},
            },
            namespace=self.ns,
        )


@pytest.fixture
def harness(api_client, k8s):
    with running_sample(
        api_client,
        k8s.namespace,
        crd=ARTIFACTS / "crd.yaml",
        component=CONTROLLER_AGENT_NAME,
        build=lambda factory, recorder: FooController(factory, recorder, workers=2),
        watched=(FOOS, DEPLOYMENTS),
    ) as parts:
        yield Harness(
            **parts,
            foos=ResourceClient(api_client, FOOS),
            deployments=ResourceClient(api_client, DEPLOYMENTS),
        )


def replicas(obj) -> Any:
    return None if obj is None else obj["spec"].get("replicas")


def available(obj) -> Any:
    return None if obj is None else (obj.get("status") or {}).get("availableReplicas")


def test_the_foo_resource_matches_the_crd_and_the_example_is_a_foo():
    assert Resource.from_crd(ARTIFACTS / "crd.yaml") == FOOS
    crd = load_yaml(ARTIFACTS / "crd.yaml")
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    example = load_yaml(ARTIFACTS / "example-foo.yaml")
    assert (example["apiVersion"], example["kind"]) == (FOOS.api_version, FOOS.kind)
    assert example["spec"] == {"deploymentName": "example-foo", "replicas": 1}


def test_new_deployment_is_nginx_labelled_and_controlled_by_the_foo():
    foo = {
        "apiVersion": FOOS.api_version,
        "kind": "Foo",
        "metadata": {"name": "f", "namespace": NS, "uid": "u-1"},
        "spec": {"deploymentName": "d", "replicas": 2},
    }
    d = new_deployment(foo)
    assert d["metadata"]["name"] == "d" and d["spec"]["replicas"] == 2
    labels = {"app": "nginx", "controller": "f"}
    assert (
        d["spec"]["selector"]["matchLabels"]
        == labels
        == d["spec"]["template"]["metadata"]["labels"]
    )
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:latest"
    assert meta.is_controlled_by(d, foo)


def test_creating_a_foo_creates_its_owned_deployment_and_reports_availability(harness):
    foo = harness.create_foo(replicas=2)
    d = harness.wait(lambda: harness.deployment(), "the deployment")
    assert meta.is_controlled_by(d, foo)
    assert replicas(d) == 2
    harness.wait(lambda: available(harness.foo()) == 2, "status.availableReplicas == 2")
    synced = harness.events(SUCCESS_SYNCED)
    assert synced and synced[0]["message"] == MESSAGE_RESOURCE_SYNCED
    assert synced[0]["involvedObject"]["kind"] == "Foo" and synced[0]["type"] == "Normal"
    assert synced[0]["source"]["component"] == CONTROLLER_AGENT_NAME


def test_scaling_the_foo_scales_the_deployment_and_the_status_follows(harness):
    harness.create_foo(replicas=1)
    harness.wait(lambda: available(harness.foo()) == 1, "first sync")
    harness.foos.patch("example-foo", {"spec": {"replicas": 3}}, namespace=harness.ns)
    harness.wait(lambda: replicas(harness.deployment()) == 3, "deployment replicas 3")
    harness.wait(lambda: available(harness.foo()) == 3, "status.availableReplicas == 3")


def test_a_deployment_scaled_by_hand_is_scaled_back(harness):
    harness.create_foo(replicas=2)
    harness.wait(lambda: available(harness.foo()) == 2, "first sync")
    edited = harness.deployments.patch(
        "example-foo", {"spec": {"replicas": 7}}, namespace=harness.ns
    )
    harness.wait(
        lambda: (
            harness.convergence.seen(
                "Deployment", f"{harness.ns}/example-foo", meta.resource_version(edited)
            )
            and meta.resource_version(harness.deployment()) != meta.resource_version(edited)
            and replicas(harness.deployment()) == 2
        ),
        "the deployment reverted to 2",
    )


def test_a_deleted_deployment_is_recreated(harness):
    harness.create_foo(replicas=1)
    old = harness.wait(lambda: harness.deployment(), "the deployment")
    harness.deployments.delete("example-foo", harness.ns)
    new = harness.wait(
        lambda: (d := harness.deployment()) is not None and meta.uid(d) != meta.uid(old) and d,
        "a new deployment",
    )
    assert meta.is_controlled_by(new, harness.foo())


def test_deleting_the_foo_garbage_collects_its_deployment(harness):
    harness.create_foo()
    harness.wait(lambda: harness.deployment(), "the deployment")
    harness.foos.delete("example-foo", harness.ns)
    harness.wait(lambda: harness.foo() is None and harness.deployment() is None, "both gone")


def test_a_deployment_not_owned_by_the_foo_is_left_alone_with_a_warning_event(harness):
    stranger = new_deployment(
        {
            "apiVersion": FOOS.api_version,
            "kind": "Foo",
            "metadata": {"name": "someone-else", "namespace": harness.ns, "uid": "not-a-real-uid"},
            "spec": {"deploymentName": "taken", "replicas": 4},
        }
    )
    stranger["metadata"].pop("ownerReferences")
    created = harness.deployments.create(stranger, namespace=harness.ns)
    harness.create_foo("intruder", deployment_name="taken", replicas=1)
    warning = harness.wait(
        lambda: harness.recorder.flush(TIMEOUT) and harness.events(ERR_RESOURCE_EXISTS),
        "the warning event",
    )[0]
    assert warning["type"] == "Warning"
    assert warning["message"] == "Resource 'taken' already exists and is not managed by Foo"
    assert warning["involvedObject"]["name"] == "intruder"
    # nothing changed: same object, same replicas, still unowned; the Foo's status untouched
    current = harness.deployments.get("taken", namespace=harness.ns)
    assert current["spec"] == created["spec"] and not meta.owner_references(current)
    assert "availableReplicas" not in (
        harness.foos.get("intruder", namespace=harness.ns).get("status") or {}
    )
    # the sync failed, so the key is being retried with backoff
    assert harness.controller.queue.num_requeues(f"{harness.ns}/intruder") >= 1


def test_a_foo_without_a_deployment_name_is_absorbed_without_retries(harness):
    harness.foos.create(
        # the CRD requires deploymentName; "" passes the schema but names nothing
        {
            "apiVersion": FOOS.api_version,
            "kind": "Foo",
            "metadata": {"name": "nameless"},
            "spec": {"replicas": 1, "deploymentName": ""},
        },
        namespace=harness.ns,
    )
    harness.create_foo("marker", deployment_name="marker")
    harness.wait(lambda: harness.deployment("marker"), "the marker's deployment")
    assert harness.controller.queue.num_requeues(f"{harness.ns}/nameless") == 0
    assert [meta.name(d) for d in harness.controller.deployments.list(namespace=harness.ns)] == [
        "marker"
    ]


def test_the_server_refuses_a_foo_without_a_deployment_name(harness):
    """The CRD's schema requires deploymentName (422), on either server."""
    with pytest.raises(Invalid, match="spec.deploymentName"):
        harness.foos.create(
            {
                "apiVersion": FOOS.api_version,
                "kind": "Foo",
                "metadata": {"name": "nameless"},
                "spec": {"replicas": 1},
            },
            namespace=harness.ns,
        )


def test_the_command_line_runs_the_controller_from_a_kubeconfig_until_sigterm(k8s):
    deployment, code, output = run_operator_until_it_acts(
        k8s,
        "samples.sample_controller",
        crd=ARTIFACTS / "crd.yaml",
        owner=FOOS,
        example=ARTIFACTS / "example-foo.yaml",
        child=DEPLOYMENTS,
        child_name="example-foo",
        namespace=k8s.namespace,
    )
    assert deployment, "the controller process did not create the deployment"
    assert meta.controller_of(deployment)["kind"] == "Foo"
    assert code == 0, output
