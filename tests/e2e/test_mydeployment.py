"""The MyDeployment operator, end to end over HTTP: it heals what it owns, and it stays quiet."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from pyinformers.api import Invalid, Resource, ResourceClient, meta
from pyinformers.resources import DEPLOYMENTS, SERVICES
from samples.mydeployment import ARTIFACTS, COMPONENT, MYDEPLOYMENTS, MyDeploymentController
from samples.mydeployment.controller import INSTANCE_LABEL, MANAGED_BY_LABEL
from tests.support.sample_harness import SampleHarness, running_sample, workload_client
from tests.support.samples_cli import run_operator_until_it_acts

NS = "default"
#: Reconciles one change may cost: the change, the reconcile of our own repair, status progress.
MAX_RECONCILES_PER_CHANGE = 6
#: On a real control plane a Deployment's status moves in several writes (replicas, then updated,
#: ready and available ones as simulated Pods come up, then the Progressing condition), each an
#: event the owner reacts to; measured up to 8 for a scale from 2 to 3.
MAX_RECONCILES_PER_CHANGE_REAL = 14


@pytest.fixture
def api_client(k8s):
    return workload_client(k8s)


@dataclasses.dataclass
class Harness(SampleHarness):
    owners: ResourceClient
    deployments: ResourceClient
    services: ResourceClient
    markers: int = 0

    def owner(self, name: str = "web") -> dict | None:
        return self.controller.owners.get(name, namespace=self.ns)

    def deployment(self, name: str = "web") -> dict | None:
        return self.controller.deployments.get(name, namespace=self.ns)

    def service(self, name: str = "web") -> dict | None:
        return self.controller.services.get(name, namespace=self.ns)

    def describe(self) -> str:
        return f"owner={self.owner()}"

    def create(
        self, name: str = "web", image: str = "nginx:1.27", replicas: int = 2, port: int = 8080
    ) -> dict:
        return self.owners.create(
            {
                "apiVersion": MYDEPLOYMENTS.api_version,
                "kind": MYDEPLOYMENTS.kind,
                "metadata": {"name": name},
                "spec": {"image": image, "replicas": replicas, "port": port},
            },
            namespace=self.ns,
        )

    def wait_ready(self, name: str = "web") -> dict:
        return self.wait(lambda: ready(self.owner(name)) and self.owner(name), f"{name} Ready")

    def settle(self) -> None:
        """A barrier: create a fresh MyDeployment and wait until it is Ready.

        The controller works through its queue in order, so once a marker
        created now is Ready, the reconciles caused by earlier changes ran.
        """
        self.markers += 1
        name = f"marker-{self.markers}"
        self.create(name, replicas=1)
        self.wait_ready(name)


def ready(owner: dict | None) -> bool:
    if owner is None:
        return False
    status = owner.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    return (
        cond is not None
        and cond["status"] == "True"
        and status.get("observedGeneration") == owner["metadata"].get("generation")
    )


def rolled_out(deployment: dict | None) -> bool:
    """True when every replica runs the current template and no old one is left."""
    if deployment is None:
        return False
    status, want = deployment.get("status") or {}, deployment["spec"].get("replicas", 1)
    progressing = [c for c in status.get("conditions") or () if c.get("type") == "Progressing"]
    return (
        status.get("observedGeneration") == deployment["metadata"].get("generation")
        and status.get("replicas")
        == status.get("updatedReplicas")
        == status.get("availableReplicas")
        == want
        # a real Deployment controller says so last (the simulator on the embedded server has no such condition)
        and all(c.get("reason") == "NewReplicaSetAvailable" for c in progressing)
    )


def container(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]["containers"][0]


@pytest.fixture
def harness(api_client, k8s):
    with running_sample(
        api_client,
        k8s.namespace,
        crd=ARTIFACTS / "crd.yaml",
        component=COMPONENT,
        build=lambda factory, recorder: MyDeploymentController(factory, recorder, workers=1),
        watched=(MYDEPLOYMENTS, DEPLOYMENTS, SERVICES),
    ) as parts:
        yield Harness(
            **parts,
            owners=ResourceClient(api_client, MYDEPLOYMENTS),
            deployments=ResourceClient(api_client, DEPLOYMENTS),
            services=ResourceClient(api_client, SERVICES),
        )


def test_the_resource_matches_the_crd():
    assert Resource.from_crd(ARTIFACTS / "crd.yaml") == MYDEPLOYMENTS


def test_a_mydeployment_gets_an_owned_deployment_and_service_and_becomes_ready(harness):
    owner = harness.create(image="nginx:1.27", replicas=2, port=8080)
    d = harness.wait(lambda: harness.deployment(), "the deployment")
    s = harness.wait(lambda: harness.service(), "the service")
    assert meta.is_controlled_by(d, owner) and meta.is_controlled_by(s, owner)
    assert d["spec"]["replicas"] == 2
    assert container(d)["image"] == "nginx:1.27"
    assert container(d)["ports"][0]["containerPort"] == 8080
    assert meta.labels(d)[INSTANCE_LABEL] == "web" and meta.labels(d)[MANAGED_BY_LABEL] == COMPONENT
    assert s["spec"]["selector"] == {INSTANCE_LABEL: "web"}
    assert [(p["port"], p["targetPort"]) for p in s["spec"]["ports"]] == [(8080, 8080)]
    done = harness.wait_ready()
    cond = [c for c in done["status"]["conditions"] if c["type"] == "Ready"][0]
    assert (cond["reason"], cond["message"]) == ("Available", "2/2 replicas available")
    assert done["status"]["availableReplicas"] == 2


def test_a_spec_change_rolls_out_and_observed_generation_follows(harness):
    harness.create(replicas=1)
    first = harness.wait_ready()
    harness.owners.patch(
        "web", {"spec": {"replicas": 3, "image": "nginx:1.28"}}, namespace=harness.ns
    )
    harness.wait(
        lambda: (
            (d := harness.deployment())
            and d["spec"]["replicas"] == 3
            and container(d)["image"] == "nginx:1.28"
        ),
        "the rollout",
    )
    done = harness.wait(
        lambda: (
            ready(o := harness.owner())
            and o["metadata"]["generation"] > first["metadata"]["generation"]
            and o
        ),
        "Ready at the new generation",
    )
    assert done["status"]["availableReplicas"] == 3


@pytest.mark.parametrize(
    "edit, what",
    [
        ({"spec": {"replicas": 9}}, "replicas"),
        (
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "app", "image": "evil:latest"}]}}
                }
            },
            "image",
        ),
        (
            {
                "metadata": {
                    "labels": {INSTANCE_LABEL: "other", MANAGED_BY_LABEL: None, "team": "blue"}
                }
            },
            "labels",
        ),
    ],
)
def test_drift_of_the_deployment_is_reverted(harness, edit, what):
    harness.create(replicas=2)
    harness.wait_ready()
    edited = harness.deployments.patch("web", edit, namespace=harness.ns)
    reverted = harness.wait(
        lambda: (
            harness.convergence.seen(
                "Deployment", f"{harness.ns}/web", meta.resource_version(edited)
            )
            and (d := harness.deployment())
            and meta.resource_version(d) != meta.resource_version(edited)
            and d["spec"]["replicas"] == 2
            and container(d)["image"] == "nginx:1.27"
            and meta.labels(d).get(INSTANCE_LABEL) == "web"
            and meta.labels(d).get(MANAGED_BY_LABEL) == COMPONENT
            and d
        ),
        f"{what} reverted",
    )
    if what == "labels":
        assert meta.labels(reverted)["team"] == "blue"  # labels we do not manage are kept


def test_drift_of_the_service_is_reverted_and_its_cluster_ip_kept(harness):
    harness.create(port=8080)
    harness.wait_ready()
    before = harness.wait(lambda: harness.service(), "the service")
    edited = harness.services.patch(
        "web",
        {"spec": {"selector": {"app": "hijacked"}, "ports": [{"name": "http", "port": 9999}]}},
        namespace=harness.ns,
    )
    after = harness.wait(
        lambda: (
            harness.convergence.seen("Service", f"{harness.ns}/web", meta.resource_version(edited))
            and (s := harness.service())
            and s["spec"]["selector"] == {INSTANCE_LABEL: "web"}
            and [p["port"] for p in s["spec"]["ports"]] == [8080]
            and s
        ),
        "the service reverted",
    )
    assert after["spec"].get("clusterIP") == before["spec"].get("clusterIP")


@pytest.mark.parametrize("kind", ["Deployment", "Service"])
def test_a_deleted_child_is_recreated(harness, kind):
    harness.create()
    harness.wait_ready()
    get = harness.deployment if kind == "Deployment" else harness.service
    client = harness.deployments if kind == "Deployment" else harness.services
    old = harness.wait(get, kind)
    client.delete("web", harness.ns)
    new = harness.wait(
        lambda: (c := get()) is not None and meta.uid(c) != meta.uid(old) and c, f"a new {kind}"
    )
    assert meta.is_controlled_by(new, harness.owner())


def test_deleting_the_mydeployment_garbage_collects_its_children(harness):
    harness.create()
    harness.wait_ready()
    harness.owners.delete("web", harness.ns)
    harness.wait(
        lambda: (
            harness.owner() is None and harness.deployment() is None and harness.service() is None
        ),
        "all gone",
    )


def test_a_deployment_owned_by_someone_else_is_not_touched_and_ready_says_why(harness):
    created = harness.deployments.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 5,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "x", "image": "x"}]},
                },
            },
        },
        namespace=harness.ns,
    )
    harness.create()
    owner = harness.wait(
        lambda: (
            (o := harness.owner())
            and any(
                c.get("reason") == "ResourceExists"
                for c in (o.get("status") or {}).get("conditions") or []
            )
            and o
        ),
        "Ready=False ResourceExists",
    )
    cond = [c for c in owner["status"]["conditions"] if c["type"] == "Ready"][0]
    assert cond["status"] == "False" and "already exists" in cond["message"]
    assert harness.deployments.get("web", namespace=harness.ns)["spec"] == created["spec"]
    assert harness.service() is None  # blocked before the service
    warnings = harness.events("ResourceExists")
    assert warnings and warnings[0]["type"] == "Warning"


def test_each_change_costs_a_bounded_number_of_reconciles_and_then_the_controller_is_quiet(
    harness, k8s
):
    bound = MAX_RECONCILES_PER_CHANGE_REAL if k8s.real else MAX_RECONCILES_PER_CHANGE
    key = f"{harness.ns}/web"
    harness.create(replicas=2)
    harness.wait_ready()
    harness.settle()
    costs = {}

    def measure(name: str, change: Callable[[], Any], converged: Callable[[], Any]) -> None:
        before = harness.controller.reconciles(key)
        change()
        harness.wait(converged, name)
        harness.settle()
        costs[name] = harness.controller.reconciles(key) - before

    measure(
        "scale the MyDeployment",
        lambda: harness.owners.patch("web", {"spec": {"replicas": 3}}, namespace=harness.ns),
        lambda: ready(o := harness.owner()) and o["status"]["availableReplicas"] == 3,
    )
    measure(
        "edit the image by hand",
        lambda: harness.deployments.patch(
            "web",
            {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "evil"}]}}}},
            namespace=harness.ns,
        ),
        lambda: container(harness.deployment())["image"] == "nginx:1.27",
    )
    measure(
        "delete the Service",
        lambda: harness.services.delete("web", harness.ns),
        lambda: harness.service() is not None,
    )
    # On a real control plane the Deployment controller goes on rolling out after the image
    # edit (a new ReplicaSet, old Pods scaled down: each a status change the owner reacts to):
    # "nothing" starts once the rollout is complete.
    harness.wait(lambda: rolled_out(harness.deployment()), "the rollout to finish")
    harness.settle()
    measure("nothing", lambda: None, lambda: True)
    assert costs["nothing"] == 0, costs  # quiet when nothing changes: no self-triggered loop
    for name, cost in costs.items():
        if name != "nothing":
            assert 1 <= cost <= bound, costs


def test_the_command_line_runs_the_operator_from_a_kubeconfig_until_sigterm(k8s):
    service, code, output = run_operator_until_it_acts(
        k8s,
        "samples.mydeployment",
        crd=ARTIFACTS / "crd.yaml",
        owner=MYDEPLOYMENTS,
        example=ARTIFACTS / "example.yaml",
        child=SERVICES,
        child_name="web",
        namespace=k8s.namespace,
    )
    assert service, "the operator process did not create the service"
    assert meta.controller_of(service)["kind"] == "MyDeployment"
    assert code == 0, output


def test_an_invalid_spec_is_reported_in_ready_and_not_retried(harness):
    harness.owners.create(
        {
            "apiVersion": MYDEPLOYMENTS.api_version,
            "kind": MYDEPLOYMENTS.kind,
            "metadata": {"name": "bad"},
            "spec": {"replicas": 1, "image": ""},
        },  # the schema lets "" through
        namespace=harness.ns,
    )
    owner = harness.wait(
        lambda: (o := harness.owner("bad")) and (o.get("status") or {}).get("conditions") and o,
        "a status",
    )
    [cond] = owner["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "InvalidSpec",
        "spec.image is required",
    )
    assert harness.controller.queue.num_requeues(f"{harness.ns}/bad") == 0
    assert harness.deployment("bad") is None
    harness.owners.patch("bad", {"spec": {"image": "nginx"}}, namespace=harness.ns)
    harness.wait_ready("bad")


def test_the_server_refuses_a_spec_the_crd_schema_forbids(harness):
    """A missing image never reaches the controller: the CRD's schema refuses it (422), on either server."""
    with pytest.raises(Invalid, match="spec.image"):
        harness.owners.create(
            {
                "apiVersion": MYDEPLOYMENTS.api_version,
                "kind": MYDEPLOYMENTS.kind,
                "metadata": {"name": "bad"},
                "spec": {"replicas": 1},
            },
            namespace=harness.ns,
        )
