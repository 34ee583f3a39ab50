"""The samples' deploy manifests and generated RBAC, proven on a real kube-apiserver (make envtest).

* the manifests apply with kubectl, server-side dry-run first, then for real;
* the sample controller runs in-process under its ServiceAccount's token
  (TokenRequest), holding exactly ``deploy/10-rbac.yaml``, and the demo
  scenario converges (create: Deployment, status, Event; scale: update);
* with one rule narrowed, it fails with the server's words naming the verb
  and resource: at once for a read, on every retry for a write;
* ``/metrics`` behind TokenReview + SubjectAccessReview, over HTTPS: the
  authorised ServiceAccount gets 200, another one 403, no token 401;
* two replicas with leader election: one leader, the Lease written under the
  ServiceAccount;
* two sharded replicas (``--shards 4``) under the generated sharding RBAC:
  the shards split between them and every owner converges;
* the operator *process*, run with the Deployment's own args (addresses and
  certificate paths made local): ready, acts, JSON logs, exits 0 on SIGTERM.

Run with ``--k8s-server=real`` (or ``both``); skipped without the binaries.
"""

from __future__ import annotations

import copy
import logging
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

pytest.importorskip(
    "pyinformers.testing.envtest._controlplane",
    reason="the real control plane (ControlPlane) is not here",
)

from pyinformers.api import ResourceClient
from pyinformers.api._config import ConfigurationError
from pyinformers.api._errors import NotFound
from pyinformers.api._resource import Resource
from pyinformers.manager import ANY_PORT, Manager, TLSFiles
from pyinformers.record import EventRecorder
from pyinformers.resources import DEPLOYMENTS, EVENTS, SERVICES
from pyinformers.testing import eventually
from samples import mydeployment, sample_controller
from samples._support import Convergence, load_yaml
from samples.mydeployment.__main__ import OPERATOR as MYDEPLOYMENT_OPERATOR
from samples.sample_controller.__main__ import OPERATOR as SAMPLE_CONTROLLER_OPERATOR

REPOSITORY = Path(__file__).resolve().parents[2]


class Sample:
    """What the tests need to know of one sample: where its files are, what it owns, what it writes."""

    def __init__(
        self, directory, operator, component, artifacts, example, owner, children, status_field, crd
    ):
        self.deploy = REPOSITORY / "samples" / directory / "deploy"
        self.operator, self.component, self.owner, self.children = (
            operator,
            component,
            owner,
            children,
        )
        self.crd_file, self.example_file = artifacts / "crd.yaml", artifacts / example
        self.status_field, self.crd = status_field, crd
        self.sa = (
            operator.name
        )  # the ServiceAccount, its namespace and the (Cluster)Role share the name

    def example(self, name: str) -> dict:
        obj = load_yaml(self.example_file)
        obj["metadata"]["name"] = name
        if "deploymentName" in obj["spec"]:
            obj["spec"]["deploymentName"] = name
        return obj


SAMPLES = {
    "sample_controller": Sample(
        "sample_controller",
        SAMPLE_CONTROLLER_OPERATOR,
        sample_controller.CONTROLLER_AGENT_NAME,
        sample_controller.ARTIFACTS,
        "example-foo.yaml",
        sample_controller.FOOS,
        [DEPLOYMENTS],
        "availableReplicas",
        "foos.samplecontroller.k8s.io",
    ),
    "mydeployment": Sample(
        "mydeployment",
        MYDEPLOYMENT_OPERATOR,
        mydeployment.COMPONENT,
        mydeployment.ARTIFACTS,
        "example.yaml",
        mydeployment.MYDEPLOYMENTS,
        [DEPLOYMENTS, SERVICES],
        "conditions",
        "mydeployments.demo.pyinformers.dev",
    ),
}
# The narrowed-rule and metrics tests use the first sample: they test the framework, not the sample.
FOOS = sample_controller.FOOS
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
CLUSTER_ROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="needs kubectl")


def _kubectl(cp, *args: str) -> str:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(cp.kubeconfig_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def _token(admin, namespace: str, name: str) -> str:
    from kubernetes import client as k8s

    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    return (
        k8s.CoreV1Api(admin)
        .create_namespaced_service_account_token(name, namespace, request)
        .status.token
    )


def _apply(cp, sample: Sample) -> None:
    """The sample's CRD and deploy/ manifests, each step dry-run on the server first."""
    crd, namespace = str(sample.crd_file), str(sample.deploy / "00-namespace.yaml")
    _kubectl(
        cp,
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        crd,
        "-f",
        namespace,
    )
    _kubectl(cp, "apply", "--server-side", "-f", crd, "-f", namespace)
    _kubectl(cp, "wait", "--for=condition=Established", "--timeout=60s", f"crd/{sample.crd}")
    out = _kubectl(
        cp,
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        str(sample.deploy),
    )
    assert "serverside-applied (server dry run)" in out
    _kubectl(cp, "apply", "--server-side", "-f", str(sample.deploy))
    with (
        cp.api_client() as admin,
        cp.api_client(token=_token(admin, sample.sa, sample.sa)) as sa_client,
    ):
        _wait_until(
            sa_client, sample.owner, "watch", allowed=True
        )  # the authorizer sees new RBAC a moment later


@pytest.fixture(params=sorted(SAMPLES))
def sample(request, k8s_control_plane):
    """Each sample, its manifests applied on the real control plane."""
    chosen = SAMPLES[request.param]
    _apply(k8s_control_plane, chosen)
    return chosen


@pytest.fixture
def deployed(k8s_control_plane):
    """The sample controller's manifests applied; yields the control plane."""
    _apply(k8s_control_plane, SAMPLES["sample_controller"])
    return k8s_control_plane


def test_the_manifests_apply_cleanly(sample, k8s_control_plane):
    name = sample.sa
    out = _kubectl(
        k8s_control_plane,
        "get",
        "-n",
        name,
        "deployment,serviceaccount,service,role,rolebinding",
        "-o",
        "name",
    )
    assert {
        f"deployment.apps/{name}",
        f"serviceaccount/{name}",
        f"service/{name}-metrics",
        f"role.rbac.authorization.k8s.io/{name}",
        f"rolebinding.rbac.authorization.k8s.io/{name}",
    } <= set(out.split())
    # applied again, nothing would change: kubectl diff exits 0 only when the live objects equal the manifests
    diff = subprocess.run(
        [
            KUBECTL,
            "--kubeconfig",
            str(k8s_control_plane.kubeconfig_path),
            "diff",
            "--server-side",
            "-f",
            str(sample.deploy),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert diff.returncode == 0, diff.stdout + diff.stderr


def _run(sample: Sample, api_client, scenario):
    """Run the sample's controller as ``api_client`` in a Manager; returns what ``scenario(manager, started)`` does."""
    options = sample.operator.parse([], environ={})
    manager = Manager(
        api_client=api_client, metrics_port=0, health_port=0, tune_gc=False, sync_timeout=30
    )
    recorder = EventRecorder(api_client, sample.component)
    try:
        manager.add(sample.operator.build(manager.factory, recorder, options))
        started = time.monotonic()
        manager.start()
        return scenario(manager, started)
    finally:
        manager.stop(timeout=5)
        recorder.stop(timeout=3)


def test_the_sample_converges_under_its_service_account_with_exactly_the_generated_rbac(
    sample, k8s_control_plane, caplog
):
    cp = k8s_control_plane
    admin = cp.api_client()
    sa_client = cp.api_client(token=_token(admin, sample.sa, sample.sa))
    owners = ResourceClient(admin, sample.owner)
    name = "rbac-proof"
    caplog.set_level(logging.WARNING)

    def scenario(manager, started):
        listers = [manager.factory.lister(r) for r in sample.children]
        owner_lister = manager.factory.lister(sample.owner)
        with Convergence(
            [manager.factory.informer(r) for r in [sample.owner, *sample.children]]
        ) as convergence:
            owners.create(sample.example(name), namespace="default")

            def created():
                owner = owner_lister.get(name, namespace="default")
                return (
                    owner
                    and sample.status_field in (owner.get("status") or {})
                    and all(lister.get(name, namespace="default") for lister in listers)
                )

            assert convergence.wait(created, 30)[0], "the children and the status were not written"
            converged = time.monotonic() - started
            # a patch: a replace could race the controller's own status write (409)
            owners.patch(name, {"spec": {"replicas": 3}}, namespace="default")

            def scaled():
                deployment = (
                    manager.factory.lister(DEPLOYMENTS).get(name, namespace="default") or {}
                )
                return deployment.get("spec", {}).get("replicas") == 3

            assert convergence.wait(scaled, 30)[0], (
                "the Deployment was not scaled (update) under the ServiceAccount"
            )
        return converged

    try:
        seconds = _run(sample, sa_client, scenario)
        events = ResourceClient(admin, EVENTS).list("default").items
        assert any(
            e["involvedObject"]["name"] == name and e["source"].get("component") == sample.component
            for e in events
        ), "no Event recorded"
        refused = [r.getMessage() for r in caplog.records if "forbidden" in r.getMessage().lower()]
        assert not refused, refused
        print(
            f"\n{sample.sa}: converged under its ServiceAccount in {seconds:.3f} s (start() to children + status)"
        )
    finally:
        owners.delete(name, "default")
        for child in sample.children:
            try:
                ResourceClient(admin, child).delete(name, "default")
            except Exception:
                pass
        sa_client.close()
        admin.close()


def _narrowed(admin, resource: str, verb: str):
    """Replace the sample's ClusterRole with one lacking ``verb`` on ``resource``; returns a restore function."""
    roles = ResourceClient(admin, CLUSTER_ROLES)
    original = roles.get("sample-controller")
    narrowed = copy.deepcopy(original)
    for rule in narrowed["rules"]:
        if resource in rule.get("resources", ()) and verb in rule["verbs"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    narrowed["rules"] = [r for r in narrowed["rules"] if r["verbs"]]
    roles.replace(narrowed)

    def restore():
        live = roles.get("sample-controller")
        live["rules"] = original["rules"]
        roles.replace(live)

    return restore


def _wait_until(sa_client, resource: Resource, verb: str, *, allowed: bool) -> None:
    """RBAC changes reach the authorizer asynchronously: wait until it answers ``allowed`` for ``verb``."""
    from kubernetes import client as k8s

    def answered() -> bool:
        review = k8s.AuthorizationV1Api(sa_client).create_self_subject_access_review(
            {
                "spec": {
                    "resourceAttributes": {
                        "group": resource.group,
                        "resource": resource.plural,
                        "verb": verb,
                    }
                }
            }
        )
        return review.status.allowed == allowed

    eventually(
        answered,
        timeout=20,
        what=f"the authorizer to answer allowed={allowed} for {verb} {resource}",
    )


def test_without_list_on_foos_the_manager_refuses_to_start_and_names_the_rule_to_add(deployed):
    # The informers sync with a streaming list, which kube-apiserver authorizes as a watch, so a
    # missing list would only bite at the first fallback to a list (410 Gone, or a server without
    # streaming lists). Each reflector asks once before its first streaming list, and the Manager
    # refuses to start on the answer, naming the rule to add.
    cp = deployed
    admin = cp.api_client()
    sa_client = cp.api_client(token=_token(admin, "sample-controller", "sample-controller"))
    restore = _narrowed(admin, "foos", "list")
    try:
        _wait_until(sa_client, FOOS, "list", allowed=False)
        started = time.monotonic()
        with pytest.raises(ConfigurationError) as caught:
            _run(SAMPLES["sample_controller"], sa_client, lambda manager, started: None)
        message = str(caught.value)
        assert "may not list foos" in message and 'add "list"' in message, message
        assert 'resources: ["foos"]' in message, message
        print(f"\nno list on foos: refused in {time.monotonic() - started:.2f} s: {message}")
    finally:
        restore()
        sa_client.close()
        admin.close()


def test_without_watch_on_foos_run_exits_naming_the_verb_and_resource(deployed):
    cp = deployed
    admin = cp.api_client()
    sa_client = cp.api_client(token=_token(admin, "sample-controller", "sample-controller"))
    restore = _narrowed(
        admin, "foos", "watch"
    )  # the list succeeds, the caches sync, then the watch is refused
    sample = SAMPLES["sample_controller"]
    manager = Manager(
        api_client=sa_client, metrics_port=0, health_port=0, tune_gc=False, sync_timeout=30
    )
    recorder = EventRecorder(sa_client, sample.component)
    try:
        _wait_until(sa_client, FOOS, "watch", allowed=False)
        manager.add(
            sample.operator.build(manager.factory, recorder, sample.operator.parse([], environ={}))
        )
        started = time.monotonic()
        with pytest.raises(SystemExit) as caught:
            manager.run()
        elapsed = time.monotonic() - started
        message = str(caught.value)
        assert 'cannot watch resource "foos"' in message, message
        assert elapsed < 15, f"took {elapsed:.1f} s"
        print(f"\nrefused watch on foos: run() exited in {elapsed:.2f} s: {message}")
    finally:
        manager.stop(timeout=5)
        recorder.stop(timeout=3)
        restore()
        sa_client.close()
        admin.close()


def test_without_update_on_deployments_each_retry_logs_the_missing_permission(deployed, caplog):
    cp = deployed
    admin = cp.api_client()
    sa_client = cp.api_client(token=_token(admin, "sample-controller", "sample-controller"))
    foos = ResourceClient(admin, FOOS)
    foo = SAMPLES["sample_controller"].example("no-update")
    restore = _narrowed(admin, "deployments", "update")
    caplog.set_level(logging.ERROR, logger="pyinformers.controller.foos")
    try:
        _wait_until(sa_client, DEPLOYMENTS, "update", allowed=False)

        def scenario(manager, started):
            with Convergence([manager.factory.informer(DEPLOYMENTS)]) as convergence:
                foos.create(foo, namespace="default")
                assert convergence.wait(
                    lambda: manager.factory.lister(DEPLOYMENTS).get(
                        "no-update", namespace="default"
                    ),
                    30,
                )[0]
            # a patch, not get + replace: on a real server the controller-manager moves the Deployment's
            # status, the controller copies it into the Foo's, and a replace would race that (409)
            foos.patch(
                "no-update", {"spec": {"replicas": 2}}, namespace="default"
            )  # the reconcile now needs update on the Deployment, which is refused
            eventually(
                lambda: any("permission missing" in r.getMessage() for r in caplog.records),
                timeout=30,
                what="the refused update to be logged",
            )

        _run(SAMPLES["sample_controller"], sa_client, scenario)
        lines = [r.getMessage() for r in caplog.records if "permission missing" in r.getMessage()]
        assert lines, "the refused update was not reported"
        assert 'cannot update resource "deployments"' in lines[0] and "RBAC" in lines[0], lines[0]
        print(f"\nrefused update on deployments: {lines[0]}")
    finally:
        restore()
        for client, name in (
            (foos, "no-update"),
            (ResourceClient(admin, DEPLOYMENTS), "no-update"),
        ):
            try:
                client.delete(name, "default")
            except Exception:
                pass
        sa_client.close()
        admin.close()


# -- /metrics through the API server ------------------------------------------------------------------------------
def _scrape(address, token=None) -> int:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://{address[0]}:{address[1]}/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs openssl for a serving certificate"
)
def test_metrics_answer_200_to_the_reader_403_to_others_and_401_without_a_token(deployed, tmp_path):
    cp = deployed
    admin = cp.api_client()
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=metrics",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    reader = cp.client_for_service_account(
        "monitoring", "prometheus"
    )  # the SA and namespace, no rules yet
    reader.close()
    ResourceClient(admin, CLUSTER_ROLE_BINDINGS).create(
        {
            "metadata": {"name": "prometheus-sample-controller-metrics"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "sample-controller-metrics-reader",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
            ],
        }
    )
    nosy = cp.client_for_service_account("monitoring", "nosy")
    nosy.close()
    sa_client = cp.api_client(token=_token(admin, "sample-controller", "sample-controller"))
    manager = Manager(
        api_client=sa_client,
        metrics_port=ANY_PORT,
        health_port=ANY_PORT,
        bind_address="127.0.0.1",
        metrics_auth=True,
        metrics_tls=TLSFiles(str(cert), str(key)),
        tune_gc=False,
    )
    try:
        manager.start()
        address = manager.metrics_address
        outcomes = {
            "prometheus (bound to metrics-reader)": _scrape(
                address, _token(admin, "monitoring", "prometheus")
            ),
            "nosy (no binding)": _scrape(address, _token(admin, "monitoring", "nosy")),
            "anonymous": _scrape(address),
            "garbage token": _scrape(address, "not-a-token"),
        }
        print(f"\n/metrics outcomes: {outcomes}")
        assert outcomes == {
            "prometheus (bound to metrics-reader)": 200,
            "nosy (no binding)": 403,
            "anonymous": 401,
            "garbage token": 401,
        }
        with urllib.request.urlopen(
            f"http://127.0.0.1:{manager.health_address[1]}/healthz", timeout=5
        ) as r:
            assert r.status == 200  # probes stay plain HTTP, no token
    finally:
        manager.stop(timeout=5)
        ResourceClient(admin, CLUSTER_ROLE_BINDINGS).delete("prometheus-sample-controller-metrics")
        sa_client.close()
        admin.close()


def _stop_replicas(replicas, admin, sample: Sample, names) -> None:
    """Stop each ``(manager, recorder, client)``, delete the owners ``names`` and their Deployments, close ``admin``."""
    for manager, recorder, sa_client in replicas:
        manager.stop(timeout=5)
        recorder.stop(timeout=3)
        sa_client.close()
    for resource in (sample.owner, DEPLOYMENTS):
        for name in names:
            try:
                ResourceClient(admin, resource).delete(name, "default")
            except Exception:
                pass
    admin.close()


def test_two_replicas_elect_one_leader_under_the_service_account_and_converge(deployed):
    """The Deployment's shape: two replicas with --leader-elect, each with the generated RBAC only."""
    from pyinformers.manager._leader import LeaderElectionConfig

    cp = deployed
    sample = SAMPLES["sample_controller"]
    admin = cp.api_client()
    owners = ResourceClient(admin, sample.owner)
    replicas = []
    try:
        for _ in range(2):
            sa_client = cp.api_client(token=_token(admin, sample.sa, sample.sa))
            options = sample.operator.parse(["--leader-elect"], environ={})
            manager = Manager(
                api_client=sa_client,
                metrics_port=0,
                health_port=0,
                tune_gc=False,
                leader_election=LeaderElectionConfig(
                    name=options.leader_election_id, namespace=sample.sa, exit_on_lost_lease=False
                ),
            )
            recorder = EventRecorder(sa_client, sample.component)
            manager.add(sample.operator.build(manager.factory, recorder, options))
            replicas.append((manager, recorder, sa_client))
        started = time.monotonic()
        for manager, _, _ in replicas:
            manager.start()
        eventually(
            lambda: any(m.elector and m.elector.is_leader() for m, _, _ in replicas),
            timeout=30,
            what="a leader",
        )
        leaders = [m for m, _, _ in replicas if m.elector and m.elector.is_leader()]
        assert len(leaders) == 1, "expected exactly one leader"
        elected = time.monotonic() - started
        leader = leaders[0]
        with Convergence([leader.factory.informer(DEPLOYMENTS)]) as convergence:
            owners.create(sample.example("elected"), namespace="default")
            assert convergence.wait(
                lambda: leader.factory.lister(DEPLOYMENTS).get("elected", namespace="default"), 30
            )[0]
        lease = ResourceClient(admin, Resource("coordination.k8s.io", "v1", "leases", "Lease")).get(
            sample.sa, sample.sa
        )
        assert lease["spec"]["holderIdentity"] == leader.elector.identity
        print(
            f"\nleader elected in {elected:.2f} s under the ServiceAccount; Lease held by {lease['spec']['holderIdentity']}"
        )
    finally:
        _stop_replicas(replicas, admin, sample, ["elected"])


def test_two_sharded_replicas_split_the_shards_under_the_generated_sharding_rbac(deployed):
    """``--shards 4``: the RBAC generator's Lease rules are enough for membership, handovers and the shard informer."""
    import dataclasses

    from pyinformers.__main__ import rbac
    from pyinformers.leaderelection import ElectionTiming
    from pyinformers.resources import LEASES
    from pyinformers.testing import eventually

    cp = deployed
    sample = SAMPLES["sample_controller"]
    admin = cp.api_client()
    ns = sample.sa  # the ServiceAccount's namespace holds the shard Leases, as in a Pod
    generated = rbac(
        [
            "samples.sample_controller",
            "--service-account",
            f"{ns}:{sample.sa}",
            "--shards",
            "4",
            "--role-name",
            "sample-controller-sharded",
        ]
    )
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(cp.kubeconfig_path), "apply", "--server-side", "-f", "-"],
        input=generated,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    owners = ResourceClient(admin, sample.owner)
    names = [f"sharded-{i}" for i in range(4)]
    replicas = []
    try:

        def may(verb: str) -> bool:
            from kubernetes import client as k8s

            with cp.api_client(token=_token(admin, ns, sample.sa)) as probe:
                review = k8s.AuthorizationV1Api(probe).create_self_subject_access_review(
                    {
                        "spec": {
                            "resourceAttributes": {
                                "group": LEASES.group,
                                "resource": LEASES.plural,
                                "verb": verb,
                                "namespace": ns,
                            }
                        }
                    }
                )
            return bool(review.status.allowed)

        eventually(
            lambda: may("delete") and may("watch"),
            20,
            what="the sharding Role to reach the authorizer",
        )
        for identity in ("shard-a", "shard-b"):
            sa_client = cp.api_client(token=_token(admin, ns, sample.sa))
            options = sample.operator.parse(
                ["--shards", "4", "--sharding-namespace", ns], environ={}
            )
            sharding = dataclasses.replace(
                sample.operator.manager_options(options)["sharding"],
                identity=identity,
                exit_on_lost_membership=False,
                timing=ElectionTiming(lease_duration=8.0, renew_deadline=5.0, retry_period=0.5),
            )
            manager = Manager(
                api_client=sa_client,
                metrics_port=0,
                health_port=0,
                tune_gc=False,
                sharding=sharding,
            )
            recorder = EventRecorder(sa_client, sample.component)
            manager.add(sample.operator.build(manager.factory, recorder, options))
            replicas.append((manager, recorder, sa_client))
        for manager, _, _ in replicas:
            manager.start()

        def split() -> bool:
            held = [m.shards.held() if m.shards else set() for m, _, _ in replicas]
            return all(held) and held[0].isdisjoint(held[1]) and held[0] | held[1] == set(range(4))

        eventually(split, 60, what="both replicas to hold some of the four shards, none twice")
        for name in names:
            owners.create(sample.example(name), namespace="default")
        made: set = set()

        def all_made() -> bool:
            made.update(
                d["metadata"]["name"]
                for d in ResourceClient(admin, DEPLOYMENTS).list_all("default").items
            )
            return set(names) <= made

        eventually(
            all_made,
            60,
            what="a Deployment for every Foo, made by whichever replica holds its shard",
        )
        assert not any(m.lost_lease for m, _, _ in replicas)
    finally:
        _stop_replicas(replicas, admin, sample, names)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs openssl for a serving certificate"
)
def test_the_operator_process_runs_with_the_deployments_own_args_under_its_service_account(
    deployed, tmp_path
):
    """``python -m samples.sample_controller`` with 20-deployment.yaml's args (addresses and paths made local)."""
    import json
    import signal
    import sys

    cp = deployed
    admin = cp.api_client()
    sample = SAMPLES["sample_controller"]
    documents = list(yaml.safe_load_all((sample.deploy / "20-deployment.yaml").read_text()))
    container = next(d for d in documents if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=metrics",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    metrics_port, health_port, webhook_port = _free_port(), _free_port(), _free_port()
    local = {
        "--metrics-bind-address": f"127.0.0.1:{metrics_port}",
        "--health-probe-bind-address": f"127.0.0.1:{health_port}",
        "--metrics-cert-file": str(cert),
        "--metrics-key-file": str(key),
        "--webhook-bind-address": f"127.0.0.1:{webhook_port}",
        "--webhook-cert-file": str(cert),
        "--webhook-key-file": str(key),
    }
    args = [
        f"{a.split('=')[0]}={local[a.split('=')[0]]}" if a.split("=")[0] in local else a
        for a in container["args"]
    ]
    kubeconfig = cp.write_kubeconfig(
        tmp_path / "sa.kubeconfig", token=_token(admin, sample.sa, sample.sa)
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYINFORMERS_KUBECONFIG": kubeconfig,
        "PYINFORMERS_LEADER_ELECTION_NAMESPACE": sample.sa,
    }  # the Pod's namespace, outside a Pod
    env.update({e["name"]: e["value"] for e in container.get("env", [])})
    command = [sys.executable, *container["command"][1:], *args]
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=REPOSITORY,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    owners = ResourceClient(admin, sample.owner)
    try:

        def readyz():
            assert process.poll() is None, f"the operator process exited with {process.returncode}"
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{health_port}/readyz", timeout=2
                ) as response:
                    return response.status
            except (urllib.error.URLError, ConnectionError, OSError):
                return None

        assert eventually(readyz, timeout=30, what="the process to be ready") == 200
        ready_after = time.monotonic() - started
        owners.create(sample.example("from-process"), namespace="default")
        deployments = ResourceClient(admin, DEPLOYMENTS)

        def created():
            try:
                return deployments.get("from-process", "default")
            except NotFound:
                return None

        eventually(created, timeout=30, what="the operator process to create the Deployment")
        assert _scrape(("127.0.0.1", metrics_port)) == 401  # HTTPS, authenticated
        stopping = time.monotonic()
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=40)
        stop_seconds = time.monotonic() - stopping
        assert process.returncode == 0, output
        lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        assert lines and all({"ts", "level", "logger", "msg"} <= set(line) for line in lines), (
            output[:2000]
        )
        assert not any(line["level"] == "error" for line in lines), output[:2000]
        print(
            f"\noperator process: ready in {ready_after:.2f} s, stopped on SIGTERM in {stop_seconds:.2f} s, "
            f"{len(lines)} JSON log lines"
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
        for resource in (sample.owner, DEPLOYMENTS):
            try:
                ResourceClient(admin, resource).delete("from-process", "default")
            except Exception:
                pass
        admin.close()
