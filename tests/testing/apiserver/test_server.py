"""pyinformers.testing.ApiServer, driven over HTTP by the official kubernetes client."""

from __future__ import annotations

import threading
import time
from typing import Any

import orjson
import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from pyinformers.testing import ApiServer, eventually

# -- helpers -------------------------------------------------------------------------------


def raw(
    server: ApiServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict | None = None,
    **kw: Any,
):
    """One HTTP request with urllib3, bypassing the kubernetes client's validation."""
    http = urllib3.PoolManager()
    data = body if isinstance(body, (bytes, type(None))) else orjson.dumps(body)
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    return http.request(method, server.url + path, body=data, headers=hdrs, retries=False, **kw)


def watch_lines(
    server: ApiServer, path: str, *, stop_after: int | None = None, timeout: float = 10.0
) -> list[dict]:
    """Read a watch stream as decoded events until it ends (or ``stop_after`` events)."""
    http = urllib3.PoolManager()
    resp = http.request(
        "GET",
        server.url + path,
        preload_content=False,
        timeout=urllib3.Timeout(connect=5, read=timeout),
        retries=False,
    )
    events: list[dict] = []
    try:
        buffer = b""
        for chunk in resp.stream(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    events.append(orjson.loads(line))
                    if stop_after is not None and len(events) >= stop_after:
                        return events
    finally:
        resp.release_conn()
        resp.close()
    return events


def cm(name: str, labels: dict | None = None, **data: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data,
    }


def deployment(name: str, replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wg"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            },
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            },
        ],
    },
}


@pytest.fixture
def core(api_client) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


# -- starting it ---------------------------------------------------------------------------


def test_kubeconfig_file_connects_the_official_client_unchanged(api_server, kubeconfig):
    api = config.new_client_from_config(config_file=kubeconfig)
    try:
        names = [ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items]
    finally:
        api.close()
    assert "default" in names
    assert api_server.url.startswith("http://127.0.0.1:")


def test_server_is_a_context_manager_and_stop_joins_its_threads():
    with ApiServer() as server:
        assert server.running
        client.CoreV1Api(server.api_client()).list_namespace()
    assert not server.running
    eventually(
        lambda: (
            not [t for t in threading.enumerate() if t.name.startswith("pyinformers-apiserver")]
        ),
        what="threads to end",
    )


def test_stop_closes_open_watches_promptly():
    server = ApiServer().start()
    core = client.CoreV1Api(server.api_client())
    errors: list[BaseException] = []

    def consume():
        try:
            for _ in watch.Watch().stream(
                core.list_namespaced_config_map, "default", _request_timeout=30
            ):
                pass
        except BaseException as exc:  # noqa: BLE001 - we only record that it ended
            errors.append(exc)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    eventually(lambda: server.counters["watches_open"] == 1, what="the watch to open")
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 3.0
    thread.join(5)
    assert not thread.is_alive()


def test_bearer_token_is_required_when_configured():
    with ApiServer(token="s3cret") as server:
        # No credentials: the anonymous user, whom RBAC forbids everything but /version and health.
        anonymous = raw(server, "GET", "/api/v1/namespaces")
        assert anonymous.status == 403
        assert orjson.loads(anonymous.data)["message"] == (
            'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope'
        )
        assert raw(server, "GET", "/api").status == 403
        assert raw(server, "GET", "/version").status == 200
        wrong = raw(server, "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer wrong"})
        assert wrong.status == 401 and orjson.loads(wrong.data)["reason"] == "Unauthorized"
        # The scheme is case-insensitive, as on a real server.
        assert (
            raw(
                server, "GET", "/api/v1/namespaces", headers={"Authorization": "bearer s3cret"}
            ).status
            == 200
        )
        assert (
            raw(
                server, "GET", "/api/v1/namespaces", headers={"Authorization": "BEARER s3cret"}
            ).status
            == 200
        )
        assert client.CoreV1Api(server.api_client()).list_namespace().items


def test_discovery_reflects_the_registry(api_server, api_client):
    assert orjson.loads(raw(api_server, "GET", "/api").data)["versions"] == ["v1"]
    groups = {g["name"] for g in orjson.loads(raw(api_server, "GET", "/apis").data)["groups"]}
    assert {
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    } <= groups
    core_resources = {
        r["name"] for r in orjson.loads(raw(api_server, "GET", "/api/v1").data)["resources"]
    }
    assert {
        "pods",
        "pods/status",
        "configmaps",
        "namespaces",
        "secrets",
        "services",
        "nodes",
        "serviceaccounts",
        "events",
    } <= core_resources
    apps = orjson.loads(raw(api_server, "GET", "/apis/apps/v1").data)
    assert apps["groupVersion"] == "apps/v1" and "deployments/status" in {
        r["name"] for r in apps["resources"]
    }
    assert client.VersionApi(api_client).get_code().major == "1"
    assert raw(api_server, "GET", "/apis/nope.example.com/v1").status == 404


# -- writes --------------------------------------------------------------------------------


def test_crud_on_a_configmap_sets_server_owned_metadata(core):
    created = core.create_namespaced_config_map("default", cm("a", k="1"))
    meta = created.metadata
    assert (
        meta.uid
        and meta.creation_timestamp
        and meta.resource_version
        and meta.namespace == "default"
    )
    assert core.read_namespaced_config_map("a", "default").data == {"k": "1"}
    created.data = {"k": "2"}
    replaced = core.replace_namespaced_config_map("a", "default", created)
    assert int(replaced.metadata.resource_version) > int(meta.resource_version)
    assert replaced.metadata.uid == meta.uid
    patched = core.patch_namespaced_config_map("a", "default", {"data": {"extra": "x"}})
    assert patched.data == {"k": "2", "extra": "x"}
    core.delete_namespaced_config_map("a", "default")
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("a", "default")
    assert info.value.status == 404
    assert orjson.loads(info.value.body)["reason"] == "NotFound"


def test_an_existing_name_gets_409_already_exists(core):
    core.create_namespaced_config_map("default", cm("dup"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("default", cm("dup"))
    status = orjson.loads(info.value.body)
    assert (
        info.value.status == 409
        and status["reason"] == "AlreadyExists"
        and status["kind"] == "Status"
    )


def test_a_replace_with_a_stale_resource_version_gets_409_conflict(core):
    first = core.create_namespaced_config_map("default", cm("c", v="1"))
    core.patch_namespaced_config_map("c", "default", {"data": {"v": "2"}})
    first.data = {"v": "3"}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("c", "default", first)
    assert info.value.status == 409 and orjson.loads(info.value.body)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("c", "default").data == {"v": "2"}


def test_generate_name_gets_a_unique_suffix(core):
    names = {
        core.create_namespaced_config_map(
            "default", {"metadata": {"generateName": "gen-"}}
        ).metadata.name
        for _ in range(5)
    }
    assert len(names) == 5 and all(n.startswith("gen-") and len(n) == 9 for n in names)


def test_an_update_that_changes_nothing_writes_nothing(core):
    created = core.create_namespaced_config_map("default", cm("same", k="v"))
    again = core.replace_namespaced_config_map("same", "default", created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_generation_is_bumped_by_spec_changes_only(apps):
    created = apps.create_namespaced_deployment("default", deployment("web"))
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment(
        "web", "default", {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2


def test_status_subresource_writes_change_only_status_and_main_writes_keep_it(apps):
    apps.create_namespaced_deployment("default", deployment("s"))
    with_status = apps.patch_namespaced_deployment_status(
        "s", "default", {"spec": {"replicas": 9}, "status": {"replicas": 1, "readyReplicas": 1}}
    )
    assert with_status.status.ready_replicas == 1 and with_status.spec.replicas == 1
    body = apps.read_namespaced_deployment("s", "default").to_dict()
    main = apps.patch_namespaced_deployment(
        "s", "default", {"spec": {"replicas": 2}, "status": {"readyReplicas": 7}}
    )
    assert main.spec.replicas == 2 and main.status.ready_replicas == 1
    assert body["status"]["ready_replicas"] == 1
    # Creating drops a client-supplied status too.
    d = deployment("t")
    d["status"] = {"replicas": 5}
    assert (
        apps.create_namespaced_deployment("default", d).status is None
        or apps.read_namespaced_deployment("t", "default").status.replicas is None
    )


def test_json_patch_merge_patch_and_strategic_patch(api_server, core):
    core.create_namespaced_config_map("default", cm("p", labels={"a": "1"}, k="v"))
    base = "/api/v1/namespaces/default/configmaps/p"
    ops = [
        {"op": "add", "path": "/data/n", "value": "1"},
        {"op": "remove", "path": "/metadata/labels/a"},
        {"op": "test", "path": "/data/k", "value": "v"},
    ]
    r = raw(api_server, "PATCH", base, ops, headers={"Content-Type": "application/json-patch+json"})
    assert r.status == 200
    obj = orjson.loads(r.data)
    assert obj["data"] == {"k": "v", "n": "1"} and not obj["metadata"].get("labels")
    r = raw(
        api_server,
        "PATCH",
        base,
        {"data": {"k": None}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert orjson.loads(r.data)["data"] == {"n": "1"}
    r = raw(
        api_server,
        "PATCH",
        base,
        {"metadata": {"finalizers": ["x/y"]}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert orjson.loads(r.data)["metadata"]["finalizers"] == ["x/y"]
    failed = raw(
        api_server,
        "PATCH",
        base,
        [{"op": "test", "path": "/data/n", "value": "2"}],
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert failed.status == 422
    assert (
        raw(api_server, "PATCH", base, {"a": 1}, headers={"Content-Type": "text/plain"}).status
        == 415
    )


def test_an_object_with_finalizers_is_kept_until_they_are_removed(core):
    body = cm("f")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    core.create_namespaced_config_map("default", body)
    core.delete_namespaced_config_map("f", "default")
    held = core.read_namespaced_config_map("f", "default")
    assert held.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map(
            "f", "default", {"metadata": {"finalizers": ["example.com/hold", "new/one"]}}
        )
    assert info.value.status == 422
    core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("f", "default")
    assert gone.value.status == 404


def _owned(name: str, owner: Any, kind: str = "Deployment", api_version: str = "apps/v1") -> dict:
    body = cm(name)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": owner.metadata.name,
            "uid": owner.metadata.uid,
            "controller": True,
        }
    ]
    return body


def test_deleting_an_owner_deletes_its_dependents_in_the_background(api_server, apps, core):
    owner = apps.create_namespaced_deployment("default", deployment("owner"))
    for i in range(3):
        core.create_namespaced_config_map("default", _owned(f"child-{i}", owner))
    core.create_namespaced_config_map("default", cm("bystander"))
    apps.delete_namespaced_deployment("owner", "default")
    eventually(
        lambda: (
            [o["metadata"]["name"] for o in api_server.objects("configmaps", namespace="default")]
            == ["bystander"]
        ),
        what="dependents to be collected",
    )


def test_an_object_created_for_an_owner_that_no_longer_exists_is_collected(api_server, apps, core):
    owner = apps.create_namespaced_deployment("default", deployment("gone"))
    apps.delete_namespaced_deployment("gone", "default")
    core.create_namespaced_config_map(
        "default", _owned("late-child", owner)
    )  # a controller with a stale cache
    core.create_namespaced_config_map("default", cm("unowned"))
    eventually(
        lambda: (
            [o["metadata"]["name"] for o in api_server.objects("configmaps", namespace="default")]
            == ["unowned"]
        ),
        what="the late child to be collected",
    )


def test_orphan_propagation_leaves_dependents_without_the_owner_reference(api_server, apps, core):
    owner = apps.create_namespaced_deployment("default", deployment("o"))
    core.create_namespaced_config_map("default", _owned("kept", owner))
    apps.delete_namespaced_deployment("o", "default", propagation_policy="Orphan")
    eventually(lambda: not api_server.objects("deployments", "apps"), what="the owner to go")
    eventually(lambda: api_server.gc_idle(), what="gc")
    kept = core.read_namespaced_config_map("kept", "default")
    assert not kept.metadata.owner_references


def test_foreground_propagation_deletes_dependents_before_the_owner(api_server, apps, core):
    owner = apps.create_namespaced_deployment("default", deployment("fg"))
    child = _owned("fg-child", owner)
    child["metadata"]["finalizers"] = ["example.com/slow"]
    core.create_namespaced_config_map("default", child)
    apps.delete_namespaced_deployment("fg", "default", propagation_policy="Foreground")
    held = apps.read_namespaced_deployment("fg", "default")
    assert "foregroundDeletion" in held.metadata.finalizers and held.metadata.deletion_timestamp
    eventually(
        lambda: core.read_namespaced_config_map("fg-child", "default").metadata.deletion_timestamp,
        what="the child to be deleting",
    )
    assert apps.read_namespaced_deployment("fg", "default")  # still waiting for its child
    core.patch_namespaced_config_map("fg-child", "default", {"metadata": {"finalizers": None}})
    eventually(lambda: not api_server.objects("deployments", "apps"), what="the owner to go")


def test_namespaced_writes_need_an_existing_namespace_and_deleting_one_empties_it(api_server, core):
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("nope", cm("x"))
    assert info.value.status == 404
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", cm("x"))
    core.delete_namespace("team")
    eventually(
        lambda: (
            not [n for n in api_server.objects("namespaces") if n["metadata"]["name"] == "team"]
        ),
        what="namespace removal",
    )
    assert not api_server.objects("configmaps", namespace="team")


# -- custom resources --------------------------------------------------------------------


def test_a_crd_serves_its_custom_resource_in_all_versions(api_server, api_client):
    ext = client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(CRD)
    custom = client.CustomObjectsApi(api_client)
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 1},
        "status": {"ignored": True},
    }
    created = custom.create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", body
    )
    assert created["metadata"]["generation"] == 1 and "status" not in created
    got = custom.get_namespaced_custom_object("example.com", "v1beta1", "default", "widgets", "w1")
    assert got["apiVersion"] == "example.com/v1beta1" and got["spec"] == {"size": 1}
    custom.patch_namespaced_custom_object_status(
        "example.com", "v1", "default", "widgets", "w1", {"status": {"ready": True}}
    )
    patched = custom.patch_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", "w1", {"spec": {"size": 2}}
    )
    assert patched["status"] == {"ready": True} and patched["metadata"]["generation"] == 2
    listed = custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"] for i in listed["items"]] == [
        "w1"
    ]
    resources = orjson.loads(raw(api_server, "GET", "/apis/example.com/v1").data)["resources"]
    assert {"widgets", "widgets/status"} <= {r["name"] for r in resources}
    custom.delete_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
    assert (
        custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")["items"]
        == []
    )
    ext.delete_custom_resource_definition("widgets.example.com")
    assert raw(api_server, "GET", "/apis/example.com/v1/namespaces/default/widgets").status == 404


def test_a_cluster_scoped_crd_serves_cluster_scoped_objects(api_server, api_client):
    crd = orjson.loads(orjson.dumps(CRD))
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    client.ApiextensionsV1Api(api_client).create_custom_resource_definition(crd)
    custom = client.CustomObjectsApi(api_client)
    created = custom.create_cluster_custom_object(
        "example.com",
        "v1",
        "gadgets",
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}},
    )
    assert "namespace" not in created["metadata"]
    assert raw(api_server, "GET", "/apis/example.com/v1/namespaces/default/gadgets").status == 404
    established = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(
        "gadgets.example.com"
    )
    assert {c.type: c.status for c in established.status.conditions}["Established"] == "True"


def test_strategic_merge_patch_on_a_custom_resource_is_415(api_server, api_client):
    client.ApiextensionsV1Api(api_client).create_custom_resource_definition(CRD)
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
    )
    r = raw(
        api_server,
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w",
        {"spec": {}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert r.status == 415


# -- reads -----------------------------------------------------------------------------------


def test_lists_honour_label_and_field_selectors(core):
    core.create_namespaced_config_map("default", cm("a", {"tier": "web", "env": "prod"}))
    core.create_namespaced_config_map("default", cm("b", {"tier": "db", "env": "prod"}))
    core.create_namespaced_config_map("kube-system", cm("c", {"tier": "web"}))

    def names(**kw):
        return sorted(i.metadata.name for i in core.list_config_map_for_all_namespaces(**kw).items)

    assert names(label_selector="tier=web") == ["a", "c"]
    assert names(label_selector="env in (prod),tier!=web") == ["b"]
    assert names(label_selector="!env") == ["c"]
    assert names(field_selector="metadata.namespace=default") == ["a", "b"]
    assert names(field_selector="metadata.name!=a", label_selector="tier") == ["b", "c"]
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map("default", label_selector="a b c")
    assert info.value.status == 400


def test_paging_across_many_pages_is_consistent_at_the_first_pages_resource_version(core):
    for i in range(40):
        core.create_namespaced_config_map("default", cm(f"item-{i:02d}"))
    first = core.list_namespaced_config_map("default", limit=7)
    assert len(first.items) == 7 and first.metadata.remaining_item_count == 33
    # Writes between pages must not show up in later pages.
    core.delete_namespaced_config_map("item-39", "default")
    core.create_namespaced_config_map("default", cm("item-99"))
    names = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    pages = 1
    while token:
        page = core.list_namespaced_config_map("default", limit=7, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        pages += 1
    assert pages == 6
    assert names == [f"item-{i:02d}" for i in range(40)]


def test_paging_across_namespaces_visits_every_object_once_in_key_order(core):
    # Byte-wise, "team-b/x" sorts before "team/x" ('-' < '/'): pages and tokens must share that order.
    for ns in ("team", "team-b"):
        core.create_namespace({"metadata": {"name": ns}})
        for name in ("x", "y"):
            core.create_namespaced_config_map(ns, cm(name, {"app": "web"}))
    for selector in ("", "app=web"):
        keys, token = [], None
        while True:
            page = core.list_config_map_for_all_namespaces(
                limit=1, _continue=token, label_selector=selector
            )
            keys += [f"{i.metadata.namespace}/{i.metadata.name}" for i in page.items]
            token = page.metadata._continue
            if not token:
                break
        assert len(keys) == len(set(keys)) and keys == sorted(keys)
        assert [k for k in keys if k.startswith("team")] == [
            "team-b/x",
            "team-b/y",
            "team/x",
            "team/y",
        ]


def test_a_continue_token_from_before_compaction_gets_410_expired(api_server, core):
    for i in range(5):
        core.create_namespaced_config_map("default", cm(f"x{i}"))
    first = core.list_namespaced_config_map("default", limit=2)
    core.create_namespaced_config_map("default", cm("later"))
    api_server.compact()
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert info.value.status == 410 and orjson.loads(info.value.body)["reason"] == "Expired"


def test_list_at_an_exact_resource_version_is_served_from_history(api_server, core):
    core.create_namespaced_config_map("default", cm("old"))
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("new"))
    core.delete_namespaced_config_map("old", "default")
    past = core.list_namespaced_config_map(
        "default", resource_version=rv, resource_version_match="Exact"
    )
    assert [i.metadata.name for i in past.items] == ["old"] and past.metadata.resource_version == rv
    assert [
        i.metadata.name
        for i in core.list_namespaced_config_map("default", resource_version="0").items
    ] == ["new"]
    api_server.compact()
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(
            "default", resource_version=rv, resource_version_match="Exact"
        )
    assert info.value.status == 410


def test_resource_versions_are_one_global_counter(core, apps):
    a = int(core.create_namespaced_config_map("default", cm("g")).metadata.resource_version)
    b = int(apps.create_namespaced_deployment("default", deployment("g")).metadata.resource_version)
    c = int(core.create_namespace({"metadata": {"name": "g"}}).metadata.resource_version)
    assert a < b < c


# -- watches ---------------------------------------------------------------------------------


def test_a_watch_without_resource_version_starts_with_current_objects_as_added(api_server, core):
    core.create_namespaced_config_map("default", cm("one"))
    core.create_namespaced_config_map("default", cm("two"))
    events = watch_lines(
        api_server, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1"
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "one"),
        ("ADDED", "two"),
    ]


def test_a_watch_from_a_resource_version_replays_exactly_the_missed_changes(api_server, core):
    core.create_namespaced_config_map("default", cm("before"))
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("x"))
    core.patch_namespaced_config_map("x", "default", {"data": {"a": "b"}})
    core.create_namespaced_config_map("kube-system", cm("elsewhere"))
    core.delete_namespaced_config_map("before", "default")
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    ]
    assert seen == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "before")]


def test_watch_on_a_compacted_resource_version_raises_410(api_server, core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("x"))
    api_server.compact()
    events = watch_lines(
        api_server, f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"
    )
    assert (
        events[0]["type"] == "ERROR"
        and events[0]["object"]["code"] == 410
        and events[0]["object"]["reason"] == "Expired"
    )
    with pytest.raises(ApiException) as info:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv
        ):
            pass
    assert info.value.status == 410


def test_watches_that_allow_bookmarks_get_them_periodically(api_server_factory):
    api_server = api_server_factory(bookmark_interval=0.05)
    core = client.CoreV1Api(api_server.api_client())
    start = api_server.resource_version
    idle = watch_lines(
        api_server,
        f"/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=0.3&resourceVersion={start}",
    )
    assert idle == []  # nothing newer than the start: no bookmark, as from a real server
    core.create_namespaced_config_map(
        "kube-system", cm("elsewhere")
    )  # a change this watch does not see
    events = watch_lines(
        api_server,
        f"/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=10&resourceVersion={start}",
        stop_after=3,
    )
    assert [e["type"] for e in events] == ["BOOKMARK"] * 3
    assert events[0]["object"]["kind"] == "ConfigMap"
    assert int(events[-1]["object"]["metadata"]["resourceVersion"]) == int(
        api_server.resource_version
    )
    plain = watch_lines(
        api_server, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=0.3"
    )
    assert plain == []


def test_send_initial_events_ends_with_the_initial_events_end_bookmark(api_server, core):
    core.create_namespaced_config_map("default", cm("a"))
    core.create_namespaced_config_map("default", cm("b"))
    path = (
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&timeoutSeconds=5"
    )
    events = watch_lines(api_server, path, stop_after=3)
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    bookmark = events[2]["object"]["metadata"]
    assert bookmark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["resourceVersion"] == api_server.resource_version
    bad = raw(
        api_server, "GET", "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true"
    )
    assert bad.status == 422


def test_a_selector_watch_sends_deleted_when_an_object_stops_matching_and_added_when_it_starts(
    api_server, core
):
    rv = core.create_namespaced_config_map(
        "default", cm("m", {"app": "on"})
    ).metadata.resource_version
    core.patch_namespaced_config_map("m", "default", {"metadata": {"labels": {"app": "off"}}})
    core.patch_namespaced_config_map("m", "default", {"data": {"x": "1"}})
    core.patch_namespaced_config_map("m", "default", {"metadata": {"labels": {"app": "on"}}})
    core.patch_namespaced_config_map("m", "default", {"data": {"x": "2"}})
    seen = [
        (e["type"], e["object"].metadata.resource_version)
        for e in watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=str(int(rv) - 1),
            label_selector="app=on",
            timeout_seconds=1,
        )
    ]
    first = int(rv)
    assert seen == [
        ("ADDED", str(first)),
        ("DELETED", str(first + 1)),
        ("ADDED", str(first + 3)),
        ("MODIFIED", str(first + 4)),
    ]


def test_timeout_seconds_ends_the_stream(api_server):
    started = time.monotonic()
    assert (
        watch_lines(api_server, "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=0.2")
        == []
    )
    assert time.monotonic() - started < 3


def test_a_watcher_that_cannot_keep_up_is_closed_not_waited_for(api_server_factory):
    api_server = api_server_factory(max_watch_queue=5)
    core = client.CoreV1Api(api_server.api_client())
    api_server.faults.stall_watches = True
    http = urllib3.PoolManager()
    resp = http.request(
        "GET",
        api_server.url
        + "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="
        + api_server.resource_version,
        preload_content=False,
        retries=False,
    )
    eventually(lambda: api_server.counters["watches_open"] == 1, what="watch")
    for i in range(20):  # writers are never blocked by the stalled watcher
        core.create_namespaced_config_map("default", cm(f"o{i}"))
    api_server.faults.stall_watches = False
    body = resp.read()
    resp.release_conn()
    assert body == b""  # closed for overflow before sending anything: the client re-watches
    assert api_server.counters["watches:overflowed"] == 1


def test_a_replay_from_history_longer_than_the_watch_queue_is_delivered_whole(api_server_factory):
    api_server = api_server_factory(max_watch_queue=5)
    core = client.CoreV1Api(api_server.api_client())
    rv = api_server.resource_version
    for i in range(20):
        core.create_namespaced_config_map("default", cm(f"r{i:02d}"))
    events = watch_lines(
        api_server,
        f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=0.5",
    )
    assert [e["object"]["metadata"]["name"] for e in events] == [f"r{i:02d}" for i in range(20)]


def test_a_watch_from_a_future_resource_version_sends_only_later_changes(api_server, core):
    future = int(api_server.resource_version) + 2
    received: list[str] = []
    thread = threading.Thread(
        target=lambda: received.extend(
            e["object"]["metadata"]["name"]
            for e in watch_lines(
                api_server,
                f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={future}&timeoutSeconds=1",
            )
        ),
        daemon=True,
    )
    thread.start()
    eventually(lambda: api_server.counters["watches_open"] == 1, what="the watch")
    for name in ("one", "two", "three"):
        core.create_namespaced_config_map("default", cm(name))
    thread.join(5)
    assert received == ["three"]


# -- faults ---------------------------------------------------------------------------------------


def test_error_rate_answers_500_and_throttle_rate_answers_429_with_retry_after(api_server, core):
    api_server.faults.error_rate = 1.0
    with pytest.raises(ApiException) as info:
        core.list_namespace()
    assert info.value.status == 500
    api_server.faults.reset()
    api_server.faults.throttle_rate = 1.0
    api_server.faults.retry_after = 3
    r = raw(api_server, "GET", "/api/v1/namespaces")
    assert (
        r.status == 429
        and r.headers["Retry-After"] == "3"
        and orjson.loads(r.data)["reason"] == "TooManyRequests"
    )
    assert raw(api_server, "GET", "/version").status == 200  # discovery is never faulted
    api_server.faults.reset()
    assert core.list_namespace().items
    assert (
        api_server.counters["faults:errors"] == 1 and api_server.counters["faults:throttled"] == 1
    )


def test_a_fractional_error_rate_fails_about_that_fraction(api_server, core):
    api_server.faults.seed(7)
    api_server.faults.error_rate = 0.5
    failures = 0
    for _ in range(60):
        try:
            core.list_namespace()
        except ApiException:
            failures += 1
    assert 15 < failures < 45


def test_latency_delays_every_request(api_server, core):
    api_server.faults.latency = 0.2
    started = time.monotonic()
    core.list_namespace()
    assert time.monotonic() - started >= 0.2


def test_drop_watches_cuts_every_open_watch(api_server, core):
    results: list[str] = []

    def consume():
        try:
            for _ in watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=api_server.resource_version,
                _request_timeout=10,
            ):
                pass
            results.append("ended")
        except Exception as exc:  # noqa: BLE001
            results.append(type(exc).__name__)

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    eventually(lambda: api_server.counters["watches_open"] == 3, what="3 watches")
    # The kubernetes Watch re-watches after an abrupt end? No: it raises the network error.
    assert api_server.faults.drop_watches() == 3
    for t in threads:
        t.join(5)
    assert len(results) == 3 and "ended" not in results


def test_drop_watch_probability_cuts_watches_while_they_stream(api_server, core):
    api_server.faults.drop_watch_probability = 1.0
    rv = api_server.resource_version
    core.create_namespaced_config_map("default", cm("x"))
    with pytest.raises(urllib3.exceptions.ProtocolError):
        watch_lines(
            api_server,
            f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=5",
        )
    assert api_server.counters["watches:dropped"] == 1


def test_stalled_watches_keep_the_connection_open_and_send_nothing(api_server, core):
    api_server.faults.stall_watches = True
    rv = api_server.resource_version
    http = urllib3.PoolManager()
    resp = http.request(
        "GET",
        api_server.url + f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}",
        preload_content=False,
        retries=False,
        timeout=urllib3.Timeout(read=0.5),
    )
    eventually(
        lambda: api_server.counters.get("watches_stalled") == 1, what="the watch counted as stalled"
    )
    core.create_namespaced_config_map("default", cm("s"))
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        resp.read(1)
    resp.release_conn()
    api_server.faults.stall_watches = False
    eventually(
        lambda: api_server.counters["watches_stalled"] == 0, what="the stall gauge back to zero"
    )
    events = watch_lines(
        api_server,
        f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=0.5",
    )
    assert [e["object"]["metadata"]["name"] for e in events] == ["s"]


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason"),
    [
        ("POST", "/api/v1/namespaces/default/configmaps", b"{not json", 400, "BadRequest"),
        ("POST", "/api/v1/namespaces/default/configmaps", b"[1, 2]", 400, "BadRequest"),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"kind": "Secret", "metadata": {"name": "a"}},
            400,
            "BadRequest",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"apiVersion": "apps/v1", "metadata": {"name": "a"}},
            400,
            "BadRequest",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "a", "namespace": "other"}},
            400,
            "BadRequest",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "Not_A_Name"}},
            422,
            "Invalid",
        ),
        ("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {}}, 422, "Invalid"),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "a", "labels": {"bad key": "v"}}},
            422,
            "Invalid",
        ),
        ("GET", "/api/v1/namespaces/default/gizmos", None, 404, "NotFound"),
        ("GET", "/apis/apps/v9/deployments", None, 404, "NotFound"),
        ("GET", "/api/v1/configmaps?labelSelector=a%20b%20c", None, 400, "BadRequest"),
        ("GET", "/api/v1/configmaps?fieldSelector=novalue", None, 400, "BadRequest"),
        ("GET", "/api/v1/configmaps?limit=x", None, 400, "BadRequest"),
        ("GET", "/api/v1/configmaps?continue=garbage", None, 400, "BadRequest"),
        (
            "PUT",
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "a"}},
            405,
            "MethodNotAllowed",
        ),
        ("DELETE", "/api/v1/namespaces/default/configmaps/missing", None, 404, "NotFound"),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps?dryRun=Some",
            {"metadata": {"name": "a"}},
            400,
            "BadRequest",
        ),
    ],
)
def test_bad_input_gets_a_clear_status_and_the_server_stays_up(
    api_server, method, path, body, code, reason
):
    r = raw(api_server, method, path, body)
    status = orjson.loads(r.data)
    assert (r.status, status["kind"], status["code"], status["reason"]) == (
        code,
        "Status",
        code,
        reason,
    )
    assert status["message"]
    assert raw(api_server, "GET", "/api/v1/namespaces").status == 200


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /api/v1/namespaces HTTP/2.0\r\n\r\n",
        b"GET /api/v1/namespaces HTTP/1.1\r\nno colon here\r\n\r\n",
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
    ],
)
def test_malformed_http_gets_an_error_and_a_closed_connection_not_a_hang(api_server, request_bytes):
    import socket

    with socket.create_connection(("127.0.0.1", api_server.port), timeout=5) as sock:
        sock.sendall(request_bytes)
        reply = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    assert reply.split(b" ", 2)[1] in (b"400", b"431")
    assert raw(api_server, "GET", "/api/v1/namespaces").status == 200


def test_a_name_in_the_body_must_match_the_url(api_server, core):
    core.create_namespaced_config_map("default", cm("right"))
    r = raw(api_server, "PUT", "/api/v1/namespaces/default/configmaps/right", cm("wrong"))
    assert r.status == 400


# -- observability, compaction, workloads ------------------------------------------------------


def test_requests_are_logged_and_counted(api_server, core):
    api_server.clear_requests()
    core.create_namespaced_config_map("default", cm("l"))
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("missing", "default")
    log = [(r.method, r.path, r.status) for r in api_server.requests]
    assert log == [
        ("POST", "/api/v1/namespaces/default/configmaps", 201),
        ("GET", "/api/v1/namespaces/default/configmaps/missing", 404),
    ]
    core.list_namespaced_config_map("default", label_selector="a=b")
    assert api_server.requests[-1].query == {"labelSelector": "a=b"}
    assert api_server.counters["verb:create"] == 1 and api_server.counters["status:404"] == 1


def test_automatic_compaction_every_n_writes(api_server_factory):
    api_server = api_server_factory(compact_every=10)
    core = client.CoreV1Api(api_server.api_client())
    for i in range(25):
        core.create_namespaced_config_map("default", cm(f"c{i}"))
    current, compacted = int(api_server.resource_version), api_server.store.compacted_rv
    assert 10 <= current - compacted < 20  # between N and 2N changes are kept
    events = watch_lines(
        api_server,
        f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={compacted - 1}",
    )
    assert events[0]["type"] == "ERROR"
    events = watch_lines(
        api_server,
        f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={compacted}&timeoutSeconds=0.5",
    )
    assert len(events) == current - compacted


def test_simulated_workloads_make_deployment_status_follow_spec(api_server_factory):
    api_server = api_server_factory(simulate_workloads=True, workload_delay=0.05)
    apps = client.AppsV1Api(api_server.api_client())
    apps.create_namespaced_deployment("default", deployment("sim", replicas=3))

    def ready():
        status = apps.read_namespaced_deployment_status("sim", "default").status
        return (
            status is not None
            and status.ready_replicas == 3
            and status.available_replicas == 3
            and status.observed_generation == 1
        )

    eventually(ready, what="the deployment to become ready")
    apps.patch_namespaced_deployment("sim", "default", {"spec": {"replicas": 1}})
    eventually(
        lambda: apps.read_namespaced_deployment("sim", "default").status.replicas == 1,
        what="scale down",
    )
    assert apps.read_namespaced_deployment("sim", "default").status.observed_generation == 2


# -- load ------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_twenty_watchers_each_see_every_one_of_thousands_of_writes_in_order(api_server, api_client):
    writes = 3000
    start_rv = api_server.resource_version
    received: list[list[tuple[str, int]]] = [[] for _ in range(20)]

    def consume(slot: list):
        http = urllib3.PoolManager()
        resp = http.request(
            "GET",
            api_server.url
            + f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start_rv}&timeoutSeconds=60",
            preload_content=False,
            retries=False,
        )
        buffer = b""
        for chunk in resp.stream(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                event = orjson.loads(line)
                slot.append((event["type"], int(event["object"]["metadata"]["resourceVersion"])))
            if len(slot) >= writes:
                break
        resp.release_conn()
        resp.close()

    threads = [
        threading.Thread(target=consume, args=(received[i],), daemon=True) for i in range(20)
    ]
    for t in threads:
        t.start()
    eventually(lambda: api_server.counters["watches_open"] == 20, what="20 watches", timeout=10)

    def writer(offset: int):
        core = client.CoreV1Api(api_client)
        for i in range(offset, writes // 2, 2):
            core.create_namespaced_config_map("default", cm(f"load-{i}"))
            core.patch_namespaced_config_map(f"load-{i}", "default", {"data": {"n": str(i)}})

    writers = [threading.Thread(target=writer, args=(k,), daemon=True) for k in range(2)]
    for t in writers:
        t.start()
    for t in writers:
        t.join(50)
    for t in threads:
        t.join(30)
    expected = [
        (c.type.value, c.rv) for c in api_server.store.changes_since(int(start_rv), "/configmaps")
    ]
    assert len(expected) == writes
    for slot in received:
        assert slot == expected
    rvs = [rv for _, rv in expected]
    assert rvs == sorted(set(rvs))


# -- command line ------------------------------------------------------------------------------------


def test_the_command_line_serves_until_sigterm(tmp_path):
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyinformers.testing",
            "--port",
            str(port),
            "--kubeconfig",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening on" in proc.stdout.readline()
        api = config.new_client_from_config(config_file=str(path))
        try:
            assert [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items] == [
                "default",
                "kube-public",
                "kube-system",
            ]
        finally:
            api.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        proc.stdout.close()
