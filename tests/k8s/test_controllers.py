"""Controllers, the Events recorder and the Manager against either server (the ``k8s`` fixture).

With ``--k8s-server=real`` the garbage collection here is kube-controller-manager's,
the Events are validated by kube-apiserver, and the RBAC tests run a controller
with a ServiceAccount that holds only the permissions it documents.
"""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.api import meta
from pyinformers.api._client import ResourceClient
from pyinformers.api._config import ConfigurationError
from pyinformers.cache._factory import SharedInformerFactory
from pyinformers.manager import ANY_PORT, Manager
from pyinformers.record import EventRecorder
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS, EVENTS
from pyinformers.testing import eventually
from tests.controller.test_integration import ConfigOwner
from tests.controller.test_integration import deployment as controller_integration_deployment

pytestmark = pytest.mark.timeout(180)

WAIT = 60.0

#: What ConfigOwner needs, as RBAC rules in its namespace.
CONFIG_OWNER_RULES = [
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "update"],
    },
]


def deployment(name, namespace, replicas=1):
    return controller_integration_deployment(name, replicas, namespace=namespace)


@pytest.fixture
def config_owner(k8s):
    """start(api_client=None) -> (factory, controller): ConfigOwner on the test's namespace; stopped after."""
    started = []

    def start(api_client=None, **options):
        factory = SharedInformerFactory(
            api_client or k8s.api_client(),
            namespace=k8s.namespace,
            metrics_registry=CollectorRegistry(),
        )
        options.setdefault("sync_timeout", WAIT)
        controller = ConfigOwner(factory, metrics_registry=CollectorRegistry(), **options)
        factory.start()
        started.append((factory, controller))
        controller.start()
        return factory, controller

    yield start
    for factory, controller in started:
        controller.stop(5)
        factory.stop(5)


def child(client, name, namespace):
    try:
        return client.get(f"{name}-config", namespace)
    except Exception:
        return None


def test_owned_children_are_made_repaired_recreated_and_garbage_collected(k8s, config_owner):
    factory, _ = config_owner(workers=2)
    ns = k8s.namespace
    deployments, configmaps = factory.client(DEPLOYMENTS), factory.client(CONFIGMAPS)
    owner = deployments.create(deployment("web", ns, replicas=3))

    cm = eventually(lambda: child(configmaps, "web", ns), WAIT, what="the child ConfigMap")
    assert cm["data"] == {"replicas": "3"} and meta.is_controlled_by(cm, owner)

    edited = meta.deep_copy(cm)
    edited["data"] = {"replicas": "99"}
    edited_rv = configmaps.replace(edited)["metadata"]["resourceVersion"]
    eventually(
        lambda: (
            (c := child(configmaps, "web", ns))
            and c["metadata"]["resourceVersion"] != edited_rv
            and c["data"] == {"replicas": "3"}
        ),
        WAIT,
        what="the edit reverted",
    )

    configmaps.delete("web-config", ns)
    recreated = eventually(
        lambda: (
            (c := child(configmaps, "web", ns))
            and c["metadata"]["uid"] != cm["metadata"]["uid"]
            and c
        ),
        WAIT,
        what="the child recreated",
    )
    assert recreated["data"] == {"replicas": "3"}

    deployments.patch("web", {"spec": {"replicas": 5}}, ns)
    eventually(
        lambda: (c := child(configmaps, "web", ns)) and c["data"] == {"replicas": "5"},
        WAIT,
        what="spec followed",
    )

    if not k8s.garbage_collection:
        pytest.skip(
            "no kube-controller-manager (setup-envtest assets): garbage collection not checked"
        )
    deployments.delete("web", ns, propagation_policy="Background")
    eventually(lambda: child(configmaps, "web", ns) is None, WAIT, what="the child collected")


def test_events_are_created_then_aggregated(k8s):
    api = k8s.api_client()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": k8s.namespace, "uid": "u-7"},
    }
    with EventRecorder(api, "recorder-test") as recorder:
        recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container")
        assert recorder.flush(WAIT)
        recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container")
        assert recorder.flush(WAIT)
        assert recorder.stats.failed == 0
    events = [
        e
        for e in ResourceClient(api, EVENTS).list(k8s.namespace).items
        if e.get("reason") == "BackOff"
    ]
    assert len(events) == 1, events
    [event] = events
    assert event["count"] == 2 and event["type"] == "Warning"
    assert (
        event["involvedObject"]["name"] == "web-1"
        and event["source"]["component"] == "recorder-test"
    )


def test_a_manager_from_a_kubeconfig_syncs_reconciles_and_reports_ready(k8s):
    registry = CollectorRegistry()
    manager = Manager(
        k8s.write_kubeconfig(),
        namespace=k8s.namespace,
        metrics_port=ANY_PORT,
        health_port=ANY_PORT,
        bind_address="127.0.0.1",
        metrics_registry=registry,
    )
    owner = ConfigOwner(manager.factory, metrics_registry=registry)
    manager.add(owner)
    manager.start()
    try:
        address = manager.health_address
        eventually(lambda: _status(address, "/readyz") == 200, WAIT, what="readyz")
        manager.factory.client(DEPLOYMENTS).create(deployment("managed", k8s.namespace))
        eventually(
            lambda: child(manager.factory.client(CONFIGMAPS), "managed", k8s.namespace),
            WAIT,
            what="the child",
        )
    finally:
        assert manager.stop(10)


def _status(address, path):
    try:
        with urllib.request.urlopen(
            f"http://{address[0]}:{address[1]}{path}", timeout=5
        ) as response:
            return response.status
    except OSError:
        return None


@pytest.mark.k8s_server("real")
def test_a_controller_works_with_exactly_the_permissions_it_documents(k8s, config_owner):
    sa = k8s.client_for_service_account("config-owner", rules=CONFIG_OWNER_RULES)
    config_owner(api_client=sa)
    with k8s.api_client() as admin:
        ResourceClient(admin, DEPLOYMENTS).create(deployment("rbac", k8s.namespace))
        eventually(
            lambda: child(ResourceClient(admin, CONFIGMAPS), "rbac", k8s.namespace),
            WAIT,
            what="the child",
        )


@pytest.mark.k8s_server("real")
def test_without_list_permission_the_manager_refuses_to_start_and_says_what_to_add(k8s):
    # The informers sync with a streaming list, which kube-apiserver authorizes as a watch: the
    # cache would fill without list, and the 403 would come with the first fallback to a list
    # (after a 410), hours later. The reflector asks before its first streaming list instead,
    # and the Manager refuses to start, as for any refusal (tests/manager/test_deploy.py).
    rules = [dict(r) for r in CONFIG_OWNER_RULES]
    rules[1] = {**rules[1], "verbs": ["get", "watch", "create", "update"]}  # no list on ConfigMaps
    sa = k8s.client_for_service_account("config-owner-no-list", rules=rules)
    registry = CollectorRegistry()
    manager = Manager(
        api_client=sa,
        namespace=k8s.namespace,
        metrics_port=0,
        health_port=0,
        metrics_registry=registry,
    )
    manager.add(ConfigOwner(manager.factory, metrics_registry=registry))
    try:
        with pytest.raises(ConfigurationError) as refused:
            manager.start()
        message = str(refused.value)
        assert (
            f'may not list configmaps (API group "" (core)) in namespace "{k8s.namespace}"'
            in message
        )
        assert (
            'add "list" to the verbs of the rule {apiGroups: [""], resources: ["configmaps"]}'
            in message
        )
    finally:
        manager.stop(5)


@pytest.mark.k8s_server("real")
def test_without_watch_permission_the_cache_syncs_but_the_informer_reports_unhealthy(
    k8s, config_owner
):
    # The list is allowed, so the cache fills and syncs; every watch is then refused (403),
    # and the informer's health (what a Manager's /healthz reports) says so.
    rules = [dict(r) for r in CONFIG_OWNER_RULES]
    rules[1] = {**rules[1], "verbs": ["get", "list", "create", "update"]}  # no watch on ConfigMaps
    sa = k8s.client_for_service_account("config-owner-no-watch", rules=rules)
    factory, _ = config_owner(api_client=sa)
    informer = factory.informer(CONFIGMAPS)
    eventually(
        lambda: not informer.healthy(), WAIT, what="the informer to report its failing watch"
    )
    assert factory.informer(DEPLOYMENTS).healthy()
