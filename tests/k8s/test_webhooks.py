"""Admission and conversion webhooks called by the API server, on either server (the ``k8s`` fixture).

Each test registers handlers in a :class:`~pyinformers.webhook.Webhooks`,
installs them with ``k8s.install_webhooks`` (a webhook server in this
process, its configurations in the API server, restricted to the test's
namespace) and writes through the API server as a user would. On a real
control plane the answers are kube-apiserver's; the embedded server is held
to the same status codes and messages.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest

from pyinformers.api import ApiError, Resource, ResourceClient
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually
from pyinformers.webhook import AdmissionRequest, Allowed, Denied, Webhooks

pytestmark = pytest.mark.timeout(180)


def _configmap(name: str, namespace: str, labels: dict | None = None, /, **data: str) -> dict:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


def _raw(
    api_client: Any,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: list | None = None,
    content_type: str = "application/json",
) -> tuple[int, dict, list[str]]:
    """(status, decoded body, Warning headers) of a request through the official client's transport."""
    method_, url, headers, body_, _ = api_client.param_serialize(
        method,
        path,
        query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(method_, url, header_params=headers, body=body_)
    data = response.read()
    warnings = [v for k, v in response.getheaders().items() if k.lower() == "warning"]
    return response.status, orjson.loads(data) if data else {}, warnings


def _create(k8s: Any, obj: dict, *, dry_run: bool = False) -> tuple[int, dict, list[str]]:
    query = [("dryRun", "All")] if dry_run else []
    with k8s.api_client() as client:
        return _raw(client, "POST", CONFIGMAPS.path(k8s.namespace), obj, query=query)


def test_a_mutating_webhook_defaults_an_object_created_through_the_api_server(k8s: Any) -> None:
    hooks = Webhooks("defaults")

    @hooks.mutating(CONFIGMAPS, operations=["CREATE"])
    def default(request: AdmissionRequest) -> None:
        request.object.setdefault("data", {}).setdefault("replicas", "1")
        request.object["metadata"].setdefault("labels", {})["defaulted/by"] = "webhook"

    with k8s.install_webhooks(hooks):
        client = ResourceClient(k8s.api_client(), CONFIGMAPS)
        created = client.create(_configmap("a", k8s.namespace))
        assert created["data"] == {"replicas": "1"}
        assert created["metadata"]["labels"] == {"defaulted/by": "webhook"}
        assert client.get("a", k8s.namespace)["data"] == {"replicas": "1"}
        kept = client.create(_configmap("b", k8s.namespace, replicas="3"))
        assert kept["data"] == {"replicas": "3"}


def test_a_validating_webhook_denies_with_its_message_reason_and_code(k8s: Any) -> None:
    hooks = Webhooks("denials")

    @hooks.validating(CONFIGMAPS)
    def check(request: AdmissionRequest) -> Denied | None:
        if request.object.get("data", {}).get("mode") == "bad":
            return Denied('data.mode: Invalid value: "bad"', reason="Invalid", code=422)
        if request.object.get("data", {}).get("mode") == "shy":
            return Denied("", reason="Forbidden", code=200)
        return None

    with k8s.install_webhooks(hooks):
        status, body, _ = _create(k8s, _configmap("a", k8s.namespace, mode="bad"))
        assert status == 422
        assert body["reason"] == "Invalid" and body["code"] == 422
        assert (
            body["message"]
            == 'admission webhook "validate-configmaps.core.pyinformers.io" denied the request: '
            'data.mode: Invalid value: "bad"'
        )
        status, body, _ = _create(k8s, _configmap("b", k8s.namespace, mode="shy"))
        assert status == 400  # a denial's code is never below 400
        assert (
            body["message"]
            == 'admission webhook "validate-configmaps.core.pyinformers.io" denied the request: '
            "Forbidden"
        )
        status, body, _ = _create(k8s, _configmap("c", k8s.namespace, mode="good"))
        assert status == 201


def test_an_update_is_admitted_with_the_old_object_and_a_field_may_not_change(k8s: Any) -> None:
    hooks = Webhooks("immutable")
    seen: list[AdmissionRequest] = []

    @hooks.validating(CONFIGMAPS, operations=["UPDATE"])
    def immutable(request: AdmissionRequest) -> Denied | None:
        seen.append(request)
        if request.object["data"].get("name") != request.old_object["data"].get("name"):
            return Denied(
                "data.name: Invalid value: field is immutable", reason="Invalid", code=422
            )
        return None

    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    created = client.create(_configmap("a", k8s.namespace, name="x", other="1"))
    with k8s.install_webhooks(hooks):
        with pytest.raises(ApiError) as denied:
            client.patch("a", {"data": {"name": "y"}}, k8s.namespace)
        assert denied.value.code == 422
        assert "field is immutable" in str(denied.value)
        patched = client.patch("a", {"data": {"other": "2"}}, k8s.namespace)
        assert patched["data"] == {"name": "x", "other": "2"}
    request = seen[-1]
    assert (
        request.operation.value == "UPDATE"
        and request.name == "a"
        and request.namespace == k8s.namespace
    )
    assert (
        request.old_object["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    )
    assert request.user_info.username and "system:authenticated" in request.user_info.groups


def test_a_delete_is_admitted_with_the_old_object_only(k8s: Any) -> None:
    hooks = Webhooks("deletes")
    seen: list[AdmissionRequest] = []

    @hooks.validating(CONFIGMAPS, operations=["DELETE"])
    def keep(request: AdmissionRequest) -> Denied | None:
        seen.append(request)
        return Denied("this one stays") if request.old_object["data"].get("keep") == "yes" else None

    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    client.create(_configmap("kept", k8s.namespace, keep="yes"))
    client.create(_configmap("gone", k8s.namespace, keep="no"))
    with k8s.install_webhooks(hooks):
        with pytest.raises(ApiError) as denied:
            client.delete("kept", k8s.namespace)
        assert denied.value.code == 403
        client.delete("gone", k8s.namespace)
    assert seen[0].object is None and seen[0].old_object["metadata"]["name"] == "kept"


def test_a_mutating_webhook_for_delete_is_called_with_the_old_object_only(k8s: Any) -> None:
    hooks = Webhooks("mutating-deletes")
    seen: list[AdmissionRequest] = []
    hooks.mutating(CONFIGMAPS, operations=["DELETE"])(seen.append)
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    client.create(_configmap("gone", k8s.namespace))
    with k8s.install_webhooks(hooks):
        client.delete("gone", k8s.namespace)
    (request,) = seen
    assert request.operation.value == "DELETE" and request.name == "gone"
    assert request.object is None and request.old_object["metadata"]["name"] == "gone"
    assert request.options is not None and request.options.get("kind") == "DeleteOptions"


def test_warnings_reach_the_client_in_warning_headers(k8s: Any) -> None:
    hooks = Webhooks("warnings")

    @hooks.validating(CONFIGMAPS)
    def warn(request: AdmissionRequest) -> Allowed:
        request.warn("data.old is deprecated")
        return Allowed(warnings=["use data.new"])

    with k8s.install_webhooks(hooks):
        status, _, warnings = _create(k8s, _configmap("a", k8s.namespace, old="1"))
    assert status == 201
    assert ",".join(
        warnings
    ) == '299 - "data.old is deprecated",299 - "use data.new"' or warnings == [
        '299 - "data.old is deprecated"',
        '299 - "use data.new"',
    ]


def test_mutating_webhooks_run_before_validating_ones_and_selectors_pick_objects(k8s: Any) -> None:
    hooks = Webhooks("order")
    validated: list[dict] = []
    hooks.mutating(CONFIGMAPS, object_selector={"matchLabels": {"webhook": "on"}})(
        lambda request: request.object.setdefault("data", {}).update(mutated="yes")
    )
    hooks.validating(CONFIGMAPS)(lambda request: validated.append(request.object))

    with k8s.install_webhooks(hooks):
        client = ResourceClient(k8s.api_client(), CONFIGMAPS)
        on = client.create(_configmap("on", k8s.namespace, {"webhook": "on"}))
        off = client.create(_configmap("off", k8s.namespace, {"webhook": "off"}))
    assert on["data"] == {"mutated": "yes"} and not off.get(
        "data"
    )  # the real server drops an empty map
    assert [o["data"] for o in validated if o["metadata"]["name"] == "on"] == [{"mutated": "yes"}]


def test_a_webhook_that_asks_is_reinvoked_after_a_later_one_changed_the_object(k8s: Any) -> None:
    hooks = Webhooks("reinvoke")
    calls: list[str] = []

    @hooks.mutating(CONFIGMAPS, name="a-first.reinvoke.example.com", reinvocation_policy="IfNeeded")
    def first(request: AdmissionRequest) -> None:
        calls.append("first")
        request.object.setdefault("data", {})["seen"] = ",".join(
            sorted(request.object.get("data") or {})
        )

    @hooks.mutating(CONFIGMAPS, name="b-second.reinvoke.example.com")
    def second(request: AdmissionRequest) -> None:
        calls.append("second")
        request.object.setdefault("data", {})["second"] = "yes"

    with k8s.install_webhooks(hooks):
        created = ResourceClient(k8s.api_client(), CONFIGMAPS).create(
            _configmap("a", k8s.namespace)
        )
    assert calls == ["first", "second", "first"]
    assert created["data"] == {"second": "yes", "seen": "second,seen"}


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_an_unreachable_webhook_fails_or_is_ignored_by_its_failure_policy(
    k8s: Any, policy: str
) -> None:
    hooks = Webhooks("unreachable")
    hooks.validating(CONFIGMAPS, failure_policy=policy, timeout_seconds=2)(lambda request: None)
    with k8s.install_webhooks(hooks, url="https://127.0.0.1:1"):
        status, body, _ = _create(k8s, _configmap("a", k8s.namespace))
    if policy == "Ignore":
        assert status == 201
    else:
        assert status == 500 and body["reason"] == "InternalError"
        assert body["message"] == (
            "Internal error occurred: failed calling webhook "
            '"validate-configmaps.core.pyinformers.io": failed to call webhook: '
            'Post "https://127.0.0.1:1/validate/validate-configmaps.core.pyinformers.io'
            '?timeout=2s": dial tcp 127.0.0.1:1: connect: connection refused'
        )


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_webhook_that_never_answers_times_out_by_its_timeout_seconds(
    k8s: Any, policy: str
) -> None:
    import socket
    import time

    hooks = Webhooks("silent")
    hooks.validating(CONFIGMAPS, failure_policy=policy, timeout_seconds=1)(lambda request: None)
    with socket.socket() as silent:  # connections complete in the backlog; nothing ever answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"https://127.0.0.1:{silent.getsockname()[1]}"
        with k8s.install_webhooks(hooks, url=url):
            started = time.monotonic()
            status, body, _ = _create(k8s, _configmap("a", k8s.namespace))
            took = time.monotonic() - started
    assert took < 10
    if policy == "Ignore":
        assert status == 201
    else:
        assert status == 500
        prefix = (
            'Internal error occurred: failed calling webhook "validate-configmaps.core.pyinformers.io": '
            f'failed to call webhook: Post "{url}/validate/validate-configmaps.core.pyinformers.io'
            '?timeout=1s": '
        )
        assert body["message"] == prefix + "context deadline exceeded"


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_handler_that_raises_or_overruns_answers_by_its_failure_policy(
    k8s: Any, policy: str
) -> None:
    hooks = Webhooks("broken")
    release = threading.Event()

    @hooks.validating(CONFIGMAPS, failure_policy=policy, timeout_seconds=2)
    def broken(request: AdmissionRequest) -> None:
        if request.object["data"].get("mode") == "slow":
            release.wait(5)
            return
        raise RuntimeError("the handler is broken")

    try:
        with k8s.install_webhooks(hooks):
            raised = _create(k8s, _configmap("a", k8s.namespace, mode="raise"))
            slow = _create(k8s, _configmap("b", k8s.namespace, mode="slow"))
    finally:
        release.set()
    for (status, body, warnings), what in ((raised, "failed"), (slow, "timed out")):
        if policy == "Ignore":
            assert status == 201
            assert any(what in w for w in warnings)
        else:
            assert status == 500
            assert body["message"].startswith(
                'admission webhook "validate-configmaps.core.pyinformers.io" denied '
                f"the request: the webhook's handler {what} (request "
            )


def test_a_dry_run_reaches_webhooks_without_side_effects_and_none_on_dry_run_ones(k8s: Any) -> None:
    hooks = Webhooks("dry-run")
    dry: list[tuple[str, bool]] = []
    hooks.validating(CONFIGMAPS, name="clean.dry-run.example.com")(
        lambda request: dry.append(("clean", request.dry_run))
    )
    hooks.validating(CONFIGMAPS, name="careful.dry-run.example.com", side_effects="NoneOnDryRun")(
        lambda request: dry.append(("careful", request.dry_run))
    )
    with k8s.install_webhooks(hooks):
        status, _, _ = _create(k8s, _configmap("a", k8s.namespace), dry_run=True)
        assert status == 201 and sorted(dry) == [("careful", True), ("clean", True)]
        dry.clear()
        status, _, _ = _create(k8s, _configmap("b", k8s.namespace))
        assert status == 201 and sorted(dry) == [("careful", False), ("clean", False)]
    with k8s.api_client() as client:
        status, _, _ = _raw(client, "GET", CONFIGMAPS.path(k8s.namespace, "a"))
    assert status == 404  # the dry run stored nothing


def test_the_namespace_selector_keeps_webhooks_to_the_namespaces_it_selects(k8s: Any) -> None:
    hooks = Webhooks("namespaces")
    hooks.validating(CONFIGMAPS, namespace_selector={"matchLabels": {"webhooks": "denied"}})(
        lambda request: Denied("namespace says no")
    )
    with k8s.install_webhooks(hooks):
        status, _, _ = _create(k8s, _configmap("a", k8s.namespace))
        assert status == 201
        with k8s.api_client() as client:
            _raw(
                client,
                "PATCH",
                f"/api/v1/namespaces/{k8s.namespace}",
                {"metadata": {"labels": {"webhooks": "denied"}}},
                content_type="application/merge-patch+json",
            )
            status, body, _ = _create(k8s, _configmap("b", k8s.namespace))
    assert status == 403 and body["message"].endswith("denied the request: namespace says no")


def test_match_conditions_pick_the_requests_a_webhook_sees(k8s: Any) -> None:
    hooks = Webhooks("conditions")
    seen: list[str] = []

    def deny(request: AdmissionRequest) -> Denied:
        seen.append(request.name)
        return Denied("picked")

    conditions = [
        {
            "name": "labelled",
            "expression": "has(object.metadata.labels) && 'pick' in object.metadata.labels",
        },
        {"name": "creates", "expression": "request.operation == 'CREATE'"},
    ]
    hooks.validating(CONFIGMAPS, operations=["CREATE", "UPDATE"], match_conditions=conditions)(deny)
    with k8s.install_webhooks(hooks):
        status, _, _ = _create(k8s, _configmap("plain", k8s.namespace))
        assert status == 201
        status, body, _ = _create(k8s, _configmap("picked", k8s.namespace, {"pick": "yes"}))
        assert status == 403 and body["message"].endswith("denied the request: picked")
        client = ResourceClient(k8s.api_client(), CONFIGMAPS)
        patched = client.patch("plain", {"metadata": {"labels": {"pick": "yes"}}}, k8s.namespace)
        assert patched["metadata"]["labels"] == {
            "pick": "yes"
        }  # an UPDATE: the second condition says no
    assert seen == ["picked"]


# -- conversion -----------------------------------------------------------------------------------

GROUP = "webhooks.pyinformers.io"


def _shapes_crd(plural: str, kind: str) -> dict:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": plural,
                "kind": kind,
                "listKind": f"{kind}List",
            },
            "versions": [
                {"name": "v1", "served": True, "storage": False, "schema": schema},
                {"name": "v2", "served": True, "storage": True, "schema": schema},
            ],
        },
    }


def _shape_webhooks(kind: str) -> Webhooks:
    """v2 (the hub, stored) has spec.size; v1 has spec.replicas."""
    hooks = Webhooks("shapes")
    conversion = hooks.conversion(GROUP, kind, hub="v2", plural=kind.lower())
    conversion.spoke(
        "v1",
        to_hub=lambda o: {**o, "spec": {"size": o["spec"]["replicas"]}},
        from_hub=lambda o: {**o, "spec": {"replicas": o["spec"]["size"]}},
    )
    return hooks


def test_a_conversion_webhook_converts_between_served_versions_on_write_read_list_and_watch(
    k8s: Any,
) -> None:
    from pyinformers.controller import install_crd

    suffix = k8s.namespace.rsplit("-", 1)[-1]
    kind = f"Shape{suffix}"
    plural = kind.lower()
    admin = k8s.api_client()
    install_crd(admin, _shapes_crd(plural, kind))
    v1_resource = Resource(GROUP, "v1", plural, kind)
    v1 = ResourceClient(admin, v1_resource)
    v2 = ResourceClient(admin, Resource(GROUP, "v2", plural, kind))
    try:
        with k8s.install_webhooks(_shape_webhooks(kind)):
            probe = {
                "apiVersion": f"{GROUP}/v1",
                "kind": kind,
                "metadata": {"name": "probe"},
                "spec": {"replicas": 1},
            }

            def converting() -> bool:  # a CRD's new conversion strategy takes a moment to be used
                v1.create(probe, k8s.namespace)
                stored = v2.get("probe", k8s.namespace)
                v1.delete("probe", k8s.namespace)
                return stored["spec"] == {"size": 1}

            eventually(converting, 30, what="the CRD's conversion webhook in use")
            created = v1.create(
                {
                    "apiVersion": f"{GROUP}/v1",
                    "kind": kind,
                    "metadata": {"name": "a"},
                    "spec": {"replicas": 2},
                },
                k8s.namespace,
            )
            assert created["apiVersion"] == f"{GROUP}/v1" and created["spec"] == {"replicas": 2}
            stored = v2.get("a", k8s.namespace)
            assert stored["apiVersion"] == f"{GROUP}/v2" and stored["spec"] == {"size": 2}
            assert stored["metadata"]["uid"] == created["metadata"]["uid"]
            page = v1.list(k8s.namespace)
            assert [(o["apiVersion"], o["spec"]) for o in page.items] == [
                (f"{GROUP}/v1", {"replicas": 2})
            ]
            watch = v1.watch(
                k8s.namespace,
                resource_version=page.resource_version,
                timeout_seconds=30,
                allow_bookmarks=False,
            )
            try:
                v2.patch("a", {"spec": {"size": 3}}, k8s.namespace)
                event = next(iter(watch))
                assert event.object["apiVersion"] == f"{GROUP}/v1" and event.object["spec"] == {
                    "replicas": 3
                }
            finally:
                watch.close()
    finally:
        ResourceClient(
            admin,
            Resource(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                namespaced=False,
            ),
        ).delete(f"{plural}.{GROUP}")


# -- the sample controller's webhooks, served by its Manager ---------------------------------------


def test_the_sample_controllers_webhooks_served_by_its_manager_default_and_validate_foos(
    k8s: Any, tmp_path: Any
) -> None:
    from pyinformers.controller import install_crd
    from pyinformers.manager import ANY_PORT, Manager, TLSFiles
    from pyinformers.testing.envtest import make_serving_certs
    from samples.sample_controller.controller import ARTIFACTS, FOOS
    from samples.sample_controller.webhooks import WEBHOOKS

    install_crd(k8s.api_client(), ARTIFACTS / "crd.yaml")
    certs = make_serving_certs(tmp_path / "certs")
    manager = Manager(
        k8s.write_kubeconfig(),
        namespace=k8s.namespace,
        metrics_port=0,
        health_port=0,
        bind_address="127.0.0.1",
        webhooks=WEBHOOKS,
        webhook_port=ANY_PORT,
        webhook_tls=TLSFiles(str(certs.cert), str(certs.key)),
    )
    assert ("webhook", False, "the webhook server is not serving") in manager.ready_checks()
    manager.start()
    try:
        assert ("webhook", True, "") in manager.ready_checks()
        with k8s.install_webhooks(
            WEBHOOKS, url=manager.webhook_server.url, ca_bundle=certs.ca_cert.read_bytes()
        ):
            foos = ResourceClient(k8s.api_client(), FOOS)
            foo = {
                "apiVersion": FOOS.api_version,
                "kind": "Foo",
                "metadata": {"name": "a"},
                "spec": {"deploymentName": "web"},
            }
            created = foos.create(foo, k8s.namespace)
            assert created["spec"] == {"deploymentName": "web", "replicas": 1}
            with pytest.raises(ApiError) as bad:
                foos.create(
                    {**foo, "metadata": {"name": "b"}, "spec": {"deploymentName": "Not_A_Label"}},
                    k8s.namespace,
                )
            assert bad.value.code == 422
            assert str(bad.value.message).startswith(
                'admission webhook "validate.foos.samplecontroller.k8s.io" denied the request: '
                'spec.deploymentName: Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of'
            )
            with pytest.raises(ApiError, match="field is immutable"):
                foos.patch("a", {"spec": {"deploymentName": "other"}}, k8s.namespace)
            assert (
                foos.patch("a", {"spec": {"replicas": 3}}, k8s.namespace)["spec"]["replicas"] == 3
            )
            assert (
                manager.webhook_server.reviews["/mutate/default.foos.samplecontroller.k8s.io"] >= 2
            )
    finally:
        assert manager.stop(10)
    assert not manager.webhook_server.serving


def test_mydeployments_v1beta1_is_converted_by_its_webhook_and_the_crd_reset_after(
    k8s: Any,
) -> None:
    from pyinformers.controller import install_crd
    from samples.mydeployment import ARTIFACTS, MYDEPLOYMENTS
    from samples.mydeployment.webhooks import WEBHOOKS

    admin = k8s.api_client()
    install_crd(admin, ARTIFACTS / "crd.yaml")
    v1alpha1 = ResourceClient(admin, MYDEPLOYMENTS)
    v1beta1_resource = Resource(
        MYDEPLOYMENTS.group, "v1beta1", MYDEPLOYMENTS.plural, MYDEPLOYMENTS.kind
    )
    v1beta1 = ResourceClient(admin, v1beta1_resource)
    crds = ResourceClient(
        admin,
        Resource(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            namespaced=False,
        ),
    )
    name = "mydeployments.demo.pyinformers.dev"
    with k8s.install_webhooks(WEBHOOKS):
        body = {
            "apiVersion": v1beta1_resource.api_version,
            "kind": "MyDeployment",
            "metadata": {"name": "probe"},
            "spec": {"container": {"image": "nginx", "port": 8080}, "replicas": 2},
        }

        def converting() -> bool:  # the CRD's new conversion takes a moment to be used
            v1beta1.create(body, k8s.namespace)
            stored = v1alpha1.get("probe", k8s.namespace)
            v1alpha1.delete("probe", k8s.namespace)
            return "container" not in stored["spec"]

        eventually(converting, 30, what="the conversion webhook in use")
        created = v1beta1.create({**body, "metadata": {"name": "web"}}, k8s.namespace)
        assert created["spec"] == {"container": {"image": "nginx", "port": 8080}, "replicas": 2}
        stored = v1alpha1.get("web", k8s.namespace)
        assert stored["spec"] == {"image": "nginx", "port": 8080, "replicas": 2}
        assert stored["apiVersion"] == MYDEPLOYMENTS.api_version
    conversion = crds.get(name)["spec"]["conversion"]
    assert conversion["strategy"] == "None" and "webhook" not in conversion
