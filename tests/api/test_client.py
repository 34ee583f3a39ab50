"""ResourceClient over HTTP against the in-process API server, through the official ApiClient."""

import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from pyinformers.api import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Gone,
    ListWatch,
    NotFound,
    ResourceClient,
    ServerError,
    TooManyRequests,
    Unauthorized,
    from_model,
    to_model,
)
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS, NAMESPACES
from pyinformers.testing import eventually
from pyinformers.testing.apiserver._server import ApiServer


def configmap(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": labels}, "data": {"k": name}}


def deployment(name: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


@pytest.fixture
def configmaps(api_client):
    return ResourceClient(api_client, CONFIGMAPS)


# --------------------------------------------------------------------------- list


def test_list_pages_through_a_collection_with_limit_and_continue(configmaps):
    for i in range(25):
        configmaps.create(configmap(f"cm-{i:02d}"), "default")
    names, token, pages, versions = [], None, 0, set()
    while True:
        page = configmaps.list("default", limit=10, continue_=token)
        pages += 1
        versions.add(page.resource_version)
        names += [item["metadata"]["name"] for item in page.items]
        assert all(
            item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for item in page.items
        )
        token = page.continue_
        if token is None:
            break
    assert pages == 3 and sorted(names) == [f"cm-{i:02d}" for i in range(25)]
    assert len(versions) == 1  # one snapshot
    whole = configmaps.list_all("default", page_size=7)
    assert len(whole.items) == 25 and whole.continue_ is None


def test_list_filters_by_label_selector_in_string_and_dict_form(configmaps):
    configmaps.create(configmap("a", tier="web"), "default")
    configmaps.create(configmap("b", tier="db"), "default")
    assert [o["metadata"]["name"] for o in configmaps.list(label_selector="tier=web").items] == [
        "a"
    ]
    assert [
        o["metadata"]["name"] for o in configmaps.list(label_selector={"tier": "db"}).items
    ] == ["b"]
    selected = configmaps.list("default", field_selector="metadata.name=b").items
    assert [o["metadata"]["name"] for o in selected] == ["b"]


def test_a_cluster_scoped_resource_lists_without_a_namespace(api_client):
    namespaces = ResourceClient(api_client, NAMESPACES)
    assert "default" in {ns["metadata"]["name"] for ns in namespaces.list().items}
    with pytest.raises(ValueError):
        namespaces.list("default")


# --------------------------------------------------------------------------- watch


def test_watch_from_a_resource_version_sees_the_later_changes_in_order(configmaps):
    configmaps.create(configmap("before"), "default")
    rv = configmaps.list("default").resource_version
    configmaps.create(configmap("x"), "default")
    configmaps.patch("x", {"data": {"k": "changed"}}, "default")
    configmaps.delete("x", "default")
    seen = []
    with configmaps.watch("default", resource_version=rv, timeout_seconds=5) as stream:
        for event in stream:
            if event.type != "BOOKMARK":
                seen.append((event.type, event.object["metadata"]["name"]))
                assert event.object["kind"] == "ConfigMap"
            if len(seen) == 3:
                break
    assert seen == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "x")]


def test_a_watch_with_bookmarks_receives_bookmarks_carrying_a_resource_version():
    with ApiServer(bookmark_interval=0.05) as server:
        api_client = server.api_client()
        try:
            configmaps = ResourceClient(api_client, CONFIGMAPS)
            rv = configmaps.list().resource_version
            # A real server sends bookmarks only once its cache moved past the watch's start:
            # a write this watch does not see (another namespace) moves it.
            configmaps.create(configmap("elsewhere"), "kube-system")
            with configmaps.watch(
                namespace="default", resource_version=rv, timeout_seconds=5
            ) as stream:
                event = next(iter(stream))
        finally:
            api_client.close()
    assert event.type == "BOOKMARK" and int(event.object["metadata"]["resourceVersion"]) >= int(rv)


def test_a_watch_from_a_compacted_resource_version_raises_gone(api_server, configmaps):
    rv = configmaps.list().resource_version
    for i in range(3):
        configmaps.create(configmap(f"c{i}"), "default")
    api_server.compact()
    with pytest.raises(Gone) as caught:
        with configmaps.watch(resource_version=rv, timeout_seconds=5) as stream:
            list(stream)
    assert caught.value.code == 410


def test_a_watch_ends_cleanly_when_the_server_timeout_passes(configmaps):
    rv = configmaps.list().resource_version
    started = time.monotonic()
    events = list(configmaps.watch(resource_version=rv, timeout_seconds=1, allow_bookmarks=False))
    assert events == [] and time.monotonic() - started < 5


def test_close_from_another_thread_stops_a_blocked_watch_within_a_second(configmaps):
    rv = configmaps.list().resource_version
    stream = configmaps.watch(resource_version=rv, timeout_seconds=60, allow_bookmarks=False)
    done = threading.Event()
    result: list = []

    def read():
        try:
            result.extend(stream)
        except BaseException as error:  # pragma: no cover - reported below
            result.append(error)
        done.set()

    reader = threading.Thread(target=read, name="pyinformers-test-watch-reader", daemon=True)
    reader.start()
    assert not done.wait(0.2)  # really blocked on the network
    started = time.monotonic()
    stream.close()
    assert done.wait(1.0), "close() did not stop the reader"
    assert time.monotonic() - started < 1.0 and result == [] and stream.closed
    reader.join(1)
    configmaps.create(configmap("after"), "default")  # the pool still works after a cut connection
    assert configmaps.get("after", "default")["metadata"]["name"] == "after"


def test_close_before_iterating_yields_nothing(configmaps):
    stream = configmaps.watch(timeout_seconds=30)
    stream.close()
    stream.close()
    assert list(stream) == []


def test_list_watch_scopes_requests_to_its_namespace_and_selectors(api_server, configmaps):
    lw = ListWatch(configmaps, namespace="kube-system", label_selector={"app": "x"})
    api_server.clear_requests()
    lw.list(limit=5)
    lw.watch(resource_version="1", timeout_seconds=5).close()
    # a watch is logged by the server thread that streams it
    eventually(
        lambda: len(api_server.requests) >= 2, what="the list and the watch in the request log"
    )
    listing, watching = api_server.requests[:2]
    assert listing.path == watching.path == "/api/v1/namespaces/kube-system/configmaps"
    assert listing.query["labelSelector"] == "app=x" and listing.query["limit"] == "5"
    assert watching.query["watch"] == "true" and watching.query["allowWatchBookmarks"] == "true"
    assert watching.query["resourceVersion"] == "1" and watching.query["timeoutSeconds"] == "5"


# --------------------------------------------------------------------------- errors


def test_typed_errors_for_missing_duplicate_and_stale_writes(configmaps):
    with pytest.raises(NotFound) as missing:
        configmaps.get("nope", "default")
    assert missing.value.status.get("kind") == "Status" and missing.value.reason == "NotFound"
    created = configmaps.create(configmap("dup"), "default")
    with pytest.raises(AlreadyExists):
        configmaps.create(configmap("dup"), "default")
    configmaps.patch("dup", {"data": {"k": "newer"}}, "default")
    with pytest.raises(Conflict):
        configmaps.replace(created)  # carries the old resourceVersion


def test_throttling_raises_too_many_requests_with_retry_after(api_server, api_client):
    # urllib3's default policy would first retry a 429 three times, sleeping Retry-After
    # each time (configuration.retries); switch that off to see the answer at once.
    configuration = api_client.configuration
    configuration.retries = False
    no_retries = k8s.ApiClient(configuration)
    configmaps = ResourceClient(no_retries, CONFIGMAPS)
    api_server.faults.throttle_rate = 1.0
    api_server.faults.retry_after = 3
    with pytest.raises(TooManyRequests) as caught:
        configmaps.list()
    assert caught.value.retry_after == 3.0 and caught.value.code == 429
    with pytest.raises(TooManyRequests):
        configmaps.watch(timeout_seconds=5)
    no_retries.close()


def test_server_errors_raise_server_error(api_server, configmaps):
    api_server.faults.error_rate = 1.0
    with pytest.raises(ServerError) as caught:
        configmaps.get("x", "default")
    assert caught.value.code >= 500


def test_bearer_token_from_the_kubeconfig_is_sent_a_missing_one_is_forbidden_a_wrong_one_unauthorized(
    tmp_path,
):
    with ApiServer(token="s3cret-token") as api_server:
        _check_token_auth(api_server, api_server.write_kubeconfig(tmp_path / "kubeconfig"))


def _check_token_auth(api_server, kubeconfig):
    authorised = k8s_config.new_client_from_config(config_file=kubeconfig)
    try:
        assert ResourceClient(authorised, CONFIGMAPS).list("default").items == []
    finally:
        authorised.close()
    anonymous = k8s.ApiClient(k8s.Configuration(host=api_server.url))
    try:  # no credentials: the anonymous user, whom RBAC forbids (403, as from a real server)
        with pytest.raises(Forbidden):
            ResourceClient(anonymous, CONFIGMAPS).list("default")
    finally:
        anonymous.close()
    wrong = k8s.Configuration(host=api_server.url)
    wrong.api_key = {"authorization": "Bearer not-the-token"}
    wrong_client = k8s.ApiClient(wrong)
    try:  # credentials nobody issued: 401
        with pytest.raises(Unauthorized):
            ResourceClient(wrong_client, CONFIGMAPS).list("default")
    finally:
        wrong_client.close()


def test_the_client_refresh_hook_renews_the_token_before_each_request():
    # exec plugins and rotating token files renew credentials through this hook
    with ApiServer(token="fresh-token") as api_server:
        configuration = k8s.Configuration(host=api_server.url)
        configuration.api_key = {"authorization": "Bearer stale-token"}
        calls = []

        def refresh(config):
            calls.append(1)
            config.api_key["authorization"] = "Bearer fresh-token"

        configuration.refresh_api_key_hook = refresh
        api_client = k8s.ApiClient(configuration)
        try:
            configmaps = ResourceClient(api_client, CONFIGMAPS)
            assert configmaps.list("default").items == []
            configmaps.watch("default", timeout_seconds=5).close()
            configmaps.create({"metadata": {"name": "a"}}, "default")  # writes: the lean path
            configmaps.patch("a", {"data": {"k": "v"}}, "default")
        finally:
            api_client.close()
    assert len(calls) >= 4


def test_writes_reuse_an_official_loaders_credentials_for_a_second(monkeypatch, tmp_path):
    from kubernetes.config import kube_config

    from pyinformers.api import _http

    loads = []
    set_config = kube_config.KubeConfigLoader._set_config

    def counted(loader, client_configuration):  # what the loader's refresh hook runs each time
        loads.append(1)
        set_config(loader, client_configuration)

    monkeypatch.setattr(kube_config.KubeConfigLoader, "_set_config", counted)
    with ApiServer(token="the-token") as api_server:
        configuration = k8s.Configuration()
        kube_config.load_kube_config(
            config_file=api_server.write_kubeconfig(tmp_path / "kubeconfig"),
            client_configuration=configuration,
        )
        api_client = k8s.ApiClient(configuration)
        try:
            if _http.lean_requests(api_client) is None:  # kubernetes < 37: the official path
                pytest.skip("writes take the official call_api path, which runs the hook each time")
            configmaps = ResourceClient(api_client, CONFIGMAPS)
            loads.clear()
            for i in range(20):  # twenty writes within the second: the hook runs once for them
                configmaps.create({"metadata": {"name": f"cm-{i}"}}, "default")
            assert len(loads) == 1
            # A second later the hook runs again: rotated credentials are picked up.
            later = time.monotonic() + 1.5
            monkeypatch.setattr(_http, "_now", lambda: later)
            configmaps.create({"metadata": {"name": "later"}}, "default")
            assert len(loads) == 2
            # A hook installed meanwhile (a new load, or the user's) runs at once.
            configuration.refresh_api_key_hook = lambda config: loads.append("user")
            configmaps.create({"metadata": {"name": "swapped"}}, "default")
            assert loads[-1] == "user"
        finally:
            api_client.close()


# --------------------------------------------------------------------------- writes


def test_create_get_replace_and_replace_status(api_client):
    deployments = ResourceClient(api_client, DEPLOYMENTS)
    created = deployments.create(deployment("web"), "default")
    assert created["metadata"]["uid"] and created["kind"] == "Deployment"
    fetched = deployments.get("web", "default")
    fetched["spec"]["replicas"] = 5
    replaced = deployments.replace(fetched)
    assert replaced["spec"]["replicas"] == 5
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    replaced["status"] = {"observedGeneration": 7, "replicas": 5}
    replaced["spec"]["replicas"] = 9  # ignored by the status subresource
    status_written = deployments.replace_status(replaced)
    assert (
        status_written["status"]["observedGeneration"] == 7
        and status_written["spec"]["replicas"] == 5
    )


def test_patch_in_merge_json_and_strategic_flavours(api_client):
    deployments = ResourceClient(api_client, DEPLOYMENTS)
    deployments.create(deployment("p"), "default")
    merged = deployments.patch("p", {"metadata": {"labels": {"merged": "yes"}}}, "default")
    assert merged["metadata"]["labels"] == {"app": "p", "merged": "yes"}
    patched = deployments.patch(
        "p", [{"op": "replace", "path": "/spec/replicas", "value": 4}], "default", patch_type="json"
    )
    assert patched["spec"]["replicas"] == 4
    # (the in-process server applies strategic patches without list-merge keys: patch a scalar)
    strategic = deployments.patch(
        "p", {"spec": {"paused": True}}, "default", patch_type="strategic"
    )
    assert strategic["spec"]["paused"] is True and strategic["spec"]["replicas"] == 4
    with pytest.raises(ValueError):
        deployments.patch("p", {"x": 1}, "default", patch_type="json")
    with pytest.raises(ValueError):
        deployments.patch("p", {"x": 1}, "default", patch_type="yaml")


def test_delete_with_propagation_policy_and_preconditions(api_server, configmaps):
    created = configmaps.create(configmap("gone-soon"), "default")
    with pytest.raises(Conflict):
        configmaps.delete("gone-soon", "default", preconditions={"uid": "not-the-uid"})
    answer = configmaps.delete(
        "gone-soon", "default", propagation_policy="Background", grace_period_seconds=0
    )
    assert isinstance(answer, dict)
    with pytest.raises(NotFound):
        configmaps.get("gone-soon", "default")
    delete_request = [r for r in api_server.requests if r.method == "DELETE"][-1]
    assert delete_request.path.endswith("/configmaps/gone-soon")
    assert created["metadata"]["uid"]
    with pytest.raises(ValueError):
        configmaps.delete("x", "default", propagation_policy="Sometimes")


def test_namespaced_writes_need_a_namespace(configmaps):
    with pytest.raises(ValueError):
        configmaps.get("x")
    with pytest.raises(ValueError):
        configmaps.create(configmap("x"))


# --------------------------------------------------------------------------- typed models


def test_to_model_round_trip(api_client):
    deployments = ResourceClient(api_client, DEPLOYMENTS)
    stored = deployments.create(deployment("typed"), "default")
    model = to_model(stored, "V1Deployment")
    assert isinstance(model, k8s.V1Deployment)
    assert model.spec.replicas == 2 and model.metadata.name == "typed"
    assert model.spec.template.spec.containers[0].image == "nginx"
    assert to_model(stored, k8s.V1Deployment).metadata.uid == stored["metadata"]["uid"]
    assert from_model(model) == stored
    with pytest.raises(ValueError):
        to_model(stored, "V1NoSuchThing")
