"""SharedInformerFactory over HTTP: sharing, defaults, kubeconfig, selectors, transform, lifecycle."""

from __future__ import annotations

import threading
import time

import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.cache import SharedInformerFactory, drop_managed_fields
from pyinformers.cache._store import NAMESPACE_INDEX, OWNER_UID_INDEX
from pyinformers.resources import CONFIGMAPS, NAMESPACES, PODS
from pyinformers.testing import eventually
from tests.support.informers import EventLog, configmap, seed

pytestmark = pytest.mark.timeout(60)

MANAGED = [
    {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}},
    }
]


@pytest.fixture
def factory(api_client):
    made = []

    def make(**kwargs):
        kwargs.setdefault("metrics_registry", False)
        f = SharedInformerFactory(api_client, **kwargs)
        made.append(f)
        return f

    yield make
    for f in made:
        assert f.stop(timeout=5.0)


def test_one_informer_per_resource_and_namespace(factory):
    f = factory()
    assert f.informer(CONFIGMAPS) is f.informer(CONFIGMAPS)
    assert f.informer(CONFIGMAPS) is not f.informer(CONFIGMAPS, namespace="kube-system")
    assert f.informer(CONFIGMAPS, namespace="kube-system") is f.informer(
        CONFIGMAPS, namespace="kube-system"
    )
    # Cluster-scoped resources have no namespace: one informer whatever is asked.
    assert f.informer(NAMESPACES, namespace="x") is f.informer(NAMESPACES)
    assert f.lister(CONFIGMAPS) is f.informer(CONFIGMAPS).lister
    assert f.client(CONFIGMAPS) is f.client(CONFIGMAPS)
    assert f.informer(CONFIGMAPS).name == "v1/configmaps"
    assert f.informer(CONFIGMAPS, namespace="kube-system").name == "v1/configmaps@kube-system"
    assert len(f.informers()) == 3


def test_start_sync_and_listers(api_server, factory):
    seed(api_server, "configmaps", [configmap("a"), configmap("b", namespace="kube-system")])
    f = factory()
    configmaps = f.informer(CONFIGMAPS)
    namespaces = f.informer(NAMESPACES)
    f.start()
    assert f.wait_for_cache_sync(timeout=30)
    assert f.sync_status() == {CONFIGMAPS: True, NAMESPACES: True}
    assert configmaps.has_synced() and namespaces.has_synced()
    assert f.lister(CONFIGMAPS).get("b", namespace="kube-system")["metadata"]["name"] == "b"
    assert {o["metadata"]["name"] for o in f.lister(CONFIGMAPS).list(namespace="default")} == {"a"}
    assert {o["metadata"]["name"] for o in f.lister(NAMESPACES).list()} >= {
        "default",
        "kube-system",
    }
    # The built-in indexes are there.
    assert [
        o["metadata"]["name"] for o in configmaps.indexer.by_index(NAMESPACE_INDEX, "kube-system")
    ] == ["b"]
    assert configmaps.indexer.by_index(OWNER_UID_INDEX, "nobody") == []
    # An informer asked for after start() runs once start() is called again.
    pods = f.informer(PODS)
    assert not pods.is_running()
    f.start()
    assert f.wait_for_cache_sync(timeout=30)
    assert f.sync_status()[PODS] is True
    assert "informers=3" in repr(f)


def test_the_namespace_and_selectors_restrict_every_informer(api_server, factory):
    seed(
        api_server,
        "configmaps",
        [
            {
                **configmap("in"),
                "metadata": {"name": "in", "namespace": "kube-system", "labels": {"team": "a"}},
            },
            {
                **configmap("other-team"),
                "metadata": {
                    "name": "other-team",
                    "namespace": "kube-system",
                    "labels": {"team": "b"},
                },
            },
            {
                **configmap("other-ns"),
                "metadata": {"name": "other-ns", "namespace": "default", "labels": {"team": "a"}},
            },
        ],
    )
    f = factory(namespace="kube-system", label_selector="team=a")
    f.informer(CONFIGMAPS)
    f.start()
    assert f.wait_for_cache_sync(timeout=30)
    assert f.sync_status() == {CONFIGMAPS: True}
    assert [o["metadata"]["name"] for o in f.lister(CONFIGMAPS).list()] == ["in"]


def test_managed_fields_are_dropped_by_default_and_kept_without_a_transform(api_server, factory):
    seed(
        api_server,
        "configmaps",
        [
            {
                **configmap("m"),
                "metadata": {"name": "m", "namespace": "default", "managedFields": MANAGED},
            }
        ],
    )
    dropping = factory()
    keeping = factory(transform=None)
    for f in (dropping, keeping):
        f.informer(CONFIGMAPS)
        f.start()
        assert f.wait_for_cache_sync(timeout=30)
        assert f.sync_status() == {CONFIGMAPS: True}
    assert (
        "managedFields" not in dropping.lister(CONFIGMAPS).get("m", namespace="default")["metadata"]
    )
    assert (
        keeping.lister(CONFIGMAPS).get("m", namespace="default")["metadata"]["managedFields"]
        == MANAGED
    )
    # Watched objects too, not only listed ones.
    client = ResourceClient(dropping.api_client, CONFIGMAPS)
    client.create(
        {
            **configmap("w"),
            "metadata": {"name": "w", "namespace": "default", "managedFields": MANAGED},
        },
        namespace="default",
    )
    eventually(lambda: dropping.lister(CONFIGMAPS).get("w", namespace="default") is not None)
    assert (
        "managedFields" not in dropping.lister(CONFIGMAPS).get("w", namespace="default")["metadata"]
    )
    assert drop_managed_fields.__name__ == "drop_managed_fields"


def test_built_from_a_kubeconfig_path(api_server, kubeconfig):
    seed(api_server, "configmaps", [configmap("from-kubeconfig")])
    f = SharedInformerFactory(kubeconfig=kubeconfig, metrics_registry=False)
    try:
        f.informer(CONFIGMAPS)
        f.start()
        assert f.wait_for_cache_sync(timeout=30)
        assert f.sync_status() == {CONFIGMAPS: True}
        assert f.lister(CONFIGMAPS).get("from-kubeconfig", namespace="default") is not None
    finally:
        assert f.stop(timeout=5.0)
        f.api_client.close()


def test_bad_arguments_are_rejected(api_client, kubeconfig):
    with pytest.raises(ValueError, match="either"):
        SharedInformerFactory(api_client, kubeconfig=kubeconfig)
    with pytest.raises(ValueError):
        SharedInformerFactory(api_client, resync_period=-1)
    with pytest.raises(TypeError):
        SharedInformerFactory(api_client, transform="no")
    with pytest.raises(TypeError):
        SharedInformerFactory(api_client).informer("v1/pods")


@pytest.mark.parametrize(
    "argument, value",
    [
        ("label_selector", "app in (web"),
        ("label_selector", "app=web,,"),
        ("label_selector", {"matchLabels": {"app": "bad value!"}}),
        ("field_selector", "metadata.name"),
    ],
)
def test_a_malformed_selector_fails_when_the_factory_is_built(api_client, argument, value):
    # Once, it was sent as is, and the informer retried the server's 400 forever (issue 12, item 5).
    with pytest.raises(ValueError, match=argument):
        SharedInformerFactory(api_client, **{argument: value})


def test_wait_for_cache_sync_reports_an_informer_that_cannot_sync(api_server, factory):
    f = factory(reflector_options={"backoff_initial": 0.05, "backoff_max": 0.1})
    f.informer(CONFIGMAPS)
    api_server.faults.error_rate = 1.0
    f.start()
    began = time.monotonic()
    assert not f.wait_for_cache_sync(timeout=0.5)
    assert f.sync_status() == {CONFIGMAPS: False}
    assert time.monotonic() - began < 5
    api_server.faults.reset()
    assert f.wait_for_cache_sync(timeout=30)
    assert f.sync_status() == {CONFIGMAPS: True}


def test_shutdown_stops_everything_and_the_factory_cannot_be_reused(api_server, factory):
    f = factory(resync_period=60)
    handler = EventLog()
    for resource in (CONFIGMAPS, NAMESPACES):
        f.informer(resource).add_event_handler(handler)
    f.start()
    assert f.wait_for_cache_sync(timeout=30)
    assert f.stop(timeout=5.0)
    assert not any(
        t.name.startswith(
            ("pyinformers-informer-", "pyinformers-reflector-", "pyinformers-handler-")
        )
        for t in threading.enumerate()
    )
    with pytest.raises(RuntimeError):
        f.informer(PODS)
    with pytest.raises(RuntimeError):
        f.start()
    assert f.stop(timeout=1.0)  # idempotent


# -- options fail where they are written ---------------------------------------------------------


@pytest.mark.parametrize(
    "options, error",
    [
        ({"pag_size": 100}, "unknown reflector option.*'pag_size'.*page_size"),
        ({"page_size": "100"}, "page_size must be an int"),
        ({"stall_timeout": -1}, "stall_timeout must be > 0"),
        ({"backoff_initial": 5, "backoff_max": 1}, "backoff_initial <= backoff_max"),
        ({"on_watch_error": "log it"}, "on_watch_error must be callable"),
        ({"use_watch_list": "yes"}, "use_watch_list must be a bool"),
    ],
)
def test_a_misspelt_or_ill_typed_reflector_option_fails_when_the_factory_is_built(
    api_client, options, error
):
    with pytest.raises((TypeError, ValueError), match=error):
        SharedInformerFactory(api_client, reflector_options=options, metrics_registry=False)


def test_reflector_options_are_validated_when_made_and_shared_as_values():
    from pyinformers.cache import ReflectorOptions

    with pytest.raises(ValueError, match="min_watch_timeout <= max_watch_timeout"):
        ReflectorOptions(min_watch_timeout=60, max_watch_timeout=30)
    fast = ReflectorOptions(backoff_initial=0.01, backoff_max=0.1)
    assert fast.replace(page_size=10) == ReflectorOptions(
        backoff_initial=0.01, backoff_max=0.1, page_size=10
    )
    with pytest.raises(ValueError):
        fast.replace(page_size=-1)
    with pytest.raises(TypeError, match="ReflectorOptions"):
        SharedInformerFactory(
            object(), reflector_options=[("page_size", 1)], metrics_registry=False
        )
