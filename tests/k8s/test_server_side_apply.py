"""Server-side apply on either server (issue 23): run with ``--k8s-server=both``.

Every scenario asserts what kube-apiserver 1.36 answers (recorded on the
real control plane): status codes, reasons, conflict causes and messages,
and the ``managedFields`` entries (manager, operation, apiVersion, whether a
time is set, the FieldsV1 set, subresource), with times left out.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson
import pytest

from pyinformers.api._transport import release, send
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(120)

APPLY = "application/apply-patch+yaml"


class Api:
    """Raw requests on one server: (status, decoded body)."""

    def __init__(self, k8s: Any) -> None:
        self.client = k8s.api_client()
        self.ns = k8s.namespace

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        **query: str,
    ) -> tuple[int, Any]:
        # The client serialises JSON bodies itself; an apply body goes as the bytes given.
        if body is not None and "json" not in content_type:
            body = body.encode() if isinstance(body, str) else orjson.dumps(body)
        headers = {"Content-Type": content_type}
        response = send(
            self.client, method, path, list(query.items()), headers=headers, body=body, timeout=30
        )
        try:
            raw = response.read()
            try:
                return response.status, orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError:  # "404 page not found" before a CRD is served
                return response.status, raw.decode(errors="replace")
        finally:
            release(response, reusable=True)

    def apply(self, path: str, body: Any, **query: str) -> tuple[int, Any]:
        return self.call("PATCH", path, body, content_type=APPLY, **query)

    def cm(self, name: str = "cm") -> str:
        return f"/api/v1/namespaces/{self.ns}/configmaps/{name}"

    def deployment(self, name: str = "web") -> str:
        return f"/apis/apps/v1/namespaces/{self.ns}/deployments/{name}"


def managed(body: dict) -> list[tuple]:
    """The managedFields entries without their times (but whether they have one)."""
    return [
        (
            e["manager"],
            e["operation"],
            e["apiVersion"],
            "time" in e,
            e.get("fieldsType"),
            e.get("fieldsV1"),
            e.get("subresource", ""),
        )
        for e in body["metadata"].get("managedFields") or []
    ]


def status_of(body: dict) -> tuple:
    return (
        body.get("code"),
        body.get("reason"),
        body.get("message"),
        (body.get("details") or {}).get("causes"),
    )


def configmap(data: dict, name: str = "cm", **meta: Any) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": dict(meta, name=name),
        "data": data,
    }


def deployment(containers: list, name: str = "web", **spec: Any) -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": dict(
            spec,
            selector={"matchLabels": labels},
            template={"metadata": {"labels": labels}, "spec": {"containers": containers}},
        ),
    }


def data_fields(*keys: str) -> dict:
    return {"f:data": {f"f:{k}": {} for k in keys}}


@pytest.fixture
def api(k8s: Any) -> Api:
    return Api(k8s)


# -- create, re-apply, conflicts, force, shared ownership ----------------------------------------


def test_an_apply_creates_the_object_and_records_its_applier(api):
    status, body = api.apply(
        api.cm(), configmap({"a": "1"}, labels={"app": "x"}), fieldManager="alpha"
    )
    assert status == 201
    assert body["data"] == {"a": "1"} and body["metadata"]["labels"] == {"app": "x"}
    assert managed(body) == [
        (
            "alpha",
            "Apply",
            "v1",
            True,
            "FieldsV1",
            {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
            "",
        )
    ]


def test_applying_the_same_configuration_again_changes_nothing_not_even_the_resource_version(api):
    _, first = api.apply(api.cm(), configmap({"a": "1"}), fieldManager="alpha")
    status, again = api.apply(api.cm(), configmap({"a": "1"}), fieldManager="alpha")
    assert status == 200
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"]


def test_a_second_manager_changing_an_owned_field_gets_a_409_naming_each_field(api):
    api.apply(api.cm(), configmap({"a": "1", "b": "2"}), fieldManager="alpha")
    status, body = api.apply(
        api.cm(), configmap({"a": "9", "b": "8", "c": "3"}), fieldManager="beta"
    )
    assert status == 409
    assert status_of(body) == (
        409,
        "Conflict",
        'Apply failed with 2 conflicts: conflicts with "alpha":\n- .data.a\n- .data.b',
        [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "alpha"',
                "field": ".data.a",
            },
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "alpha"',
                "field": ".data.b",
            },
        ],
    )
    _, now = api.call("GET", api.cm())
    assert now["data"] == {"a": "1", "b": "2"}  # nothing half-applied


def test_a_single_conflict_is_one_line_and_an_update_manager_is_named_with_its_version(api):
    api.call(
        "POST",
        f"/api/v1/namespaces/{api.ns}/configmaps",
        configmap({"a": "1"}),
        fieldManager="creator",
    )
    status, body = api.apply(api.cm(), configmap({"a": "2"}), fieldManager="beta")
    assert status_of(body) == (
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "creator" using v1: .data.a',
        [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "creator" using v1',
                "field": ".data.a",
            }
        ],
    )


def test_force_takes_the_conflicting_fields_over(api):
    api.apply(api.cm(), configmap({"a": "1", "b": "2"}), fieldManager="alpha")
    status, body = api.apply(api.cm(), configmap({"a": "9"}), fieldManager="beta", force="true")
    assert status == 200
    assert body["data"] == {"a": "9", "b": "2"}
    assert managed(body) == [
        ("alpha", "Apply", "v1", True, "FieldsV1", data_fields("b"), ""),
        ("beta", "Apply", "v1", True, "FieldsV1", data_fields("a"), ""),
    ]


def test_two_managers_applying_the_same_value_share_it(api):
    _, first = api.apply(api.cm(), configmap({"a": "1", "b": "2"}), fieldManager="alpha")
    status, body = api.apply(api.cm(), configmap({"a": "1"}), fieldManager="beta")
    assert status == 200
    # Only the entries changed: a new resourceVersion, and beta's entry has no time (its apply changed no field).
    assert body["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert managed(body) == [
        ("beta", "Apply", "v1", False, "FieldsV1", data_fields("a"), ""),
        ("alpha", "Apply", "v1", True, "FieldsV1", data_fields("a", "b"), ""),
    ]


def test_dropping_a_shared_field_keeps_it_and_dropping_a_sole_field_removes_it(api):
    api.apply(api.cm(), configmap({"a": "1", "b": "2"}), fieldManager="alpha")
    api.apply(api.cm(), configmap({"a": "1"}), fieldManager="beta")
    status, body = api.apply(api.cm(), configmap({"c": "3"}), fieldManager="alpha")
    assert status == 200
    assert body["data"] == {"a": "1", "c": "3"}  # a: beta still owns it; b: alpha owned it alone
    assert managed(body) == [
        ("beta", "Apply", "v1", False, "FieldsV1", data_fields("a"), ""),
        ("alpha", "Apply", "v1", True, "FieldsV1", data_fields("c"), ""),
    ]


def test_an_update_after_applies_takes_the_fields_it_changes_and_shares_nothing_else(api):
    api.apply(api.cm(), configmap({"a": "1", "b": "2"}), fieldManager="alpha")
    _, live = api.call("GET", api.cm())
    live["data"]["a"] = "changed"
    status, body = api.call("PUT", api.cm(), live, fieldManager="editor")
    assert status == 200
    assert managed(body) == [
        ("alpha", "Apply", "v1", True, "FieldsV1", data_fields("b"), ""),
        ("editor", "Update", "v1", True, "FieldsV1", data_fields("a"), ""),
    ]
    # The applier applying its old value again now conflicts with the editor.
    status, conflict = api.apply(api.cm(), configmap({"a": "1", "b": "2"}), fieldManager="alpha")
    assert status_of(conflict)[:3] == (
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "editor" using v1: .data.a',
    )


def test_an_update_without_a_field_manager_is_recorded_under_the_user_agents_first_word(api):
    api.client.user_agent = "my-controller/v1.2 (linux)"
    status, body = api.call(
        "POST", f"/api/v1/namespaces/{api.ns}/configmaps", configmap({"a": "1"})
    )
    assert status == 201
    assert managed(body) == [
        ("my-controller", "Update", "v1", True, "FieldsV1", {"f:data": {".": {}, "f:a": {}}}, "")
    ]


# -- bad requests ----------------------------------------------------------------------------------


def test_an_apply_without_a_field_manager_is_422(api):
    status, body = api.apply(api.cm(), configmap({"a": "1"}))
    assert (status, status_of(body)) == (
        422,
        (
            422,
            "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            ],
        ),
    )


def test_a_field_manager_longer_than_128_characters_is_422(api):
    status, body = api.apply(api.cm(), configmap({"a": "1"}), fieldManager="m" * 129)
    assert (status, status_of(body)) == (
        422,
        (
            422,
            "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes',
            [
                {
                    "reason": "FieldValueTooLong",
                    "message": "Too long: may not be more than 128 bytes",
                    "field": "fieldManager",
                }
            ],
        ),
    )


def test_a_stale_resource_version_in_the_configuration_is_a_409(api):
    _, first = api.apply(api.cm(), configmap({"a": "1"}), fieldManager="alpha")
    api.apply(api.cm(), configmap({"a": "2"}), fieldManager="alpha")
    stale = configmap({"a": "3"}, resourceVersion=first["metadata"]["resourceVersion"])
    status, body = api.apply(api.cm(), stale, fieldManager="alpha")
    assert status_of(body)[:3] == (
        409,
        "Conflict",
        'Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again',
    )


def test_a_malformed_body_is_400(api):
    status, body = api.apply(api.cm(), "{not: [yaml", fieldManager="alpha")
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "error decoding YAML: error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'",
    )


@pytest.mark.parametrize(("text", "kind"), [("[1, 2]", "array"), ('"x"', "string")])
def test_a_body_that_is_not_an_object_is_400(api, text, kind):
    status, body = api.apply(api.cm(), text, fieldManager="alpha")
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
        f"{kind} into Go value of type map[string]interface {{}}",
    )


def test_a_configuration_of_another_kind_or_without_one_is_400(api):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cm"}}
    assert (
        api.apply(api.cm(), secret, fieldManager="alpha")[1]["message"]
        == "invalid object type: /v1, Kind=Secret"
    )
    untyped = {"metadata": {"name": "cm"}, "data": {"a": "1"}}
    assert (
        api.apply(api.cm(), untyped, fieldManager="alpha")[1]["message"]
        == "invalid object type: /, Kind="
    )


def test_a_configuration_setting_managed_fields_is_400(api):
    body = configmap({"a": "1"})
    body["metadata"]["managedFields"] = [{"manager": "x", "operation": "Apply"}]
    status, answer = api.apply(api.cm(), body, fieldManager="alpha")
    assert (status, answer["reason"], answer["message"]) == (
        400,
        "BadRequest",
        "metadata.managedFields must be nil",
    )


def test_a_namespace_in_the_body_that_differs_from_the_path_is_400(api):
    status, body = api.apply(
        api.cm(), configmap({"a": "1"}, namespace="elsewhere"), fieldManager="alpha"
    )
    assert (status, body["message"]) == (
        400,
        "the namespace of the provided object does not match the namespace sent on the request",
    )


def test_a_container_without_its_name_is_merged_then_refused_by_validation(api):
    status, body = api.apply(api.deployment(), deployment([{"image": "x"}]), fieldManager="alpha")
    assert (status, status_of(body)) == (
        422,
        (
            422,
            "Invalid",
            'Deployment.apps "web" is invalid: spec.template.spec.containers[0].name: Required value',
            [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.template.spec.containers[0].name",
                }
            ],
        ),
    )


def test_apply_on_the_status_of_a_missing_object_is_404(api):
    status, body = api.apply(
        api.deployment() + "/status",
        deployment([{"name": "a", "image": "b"}]),
        fieldManager="alpha",
    )
    assert (status, body["reason"]) == (404, "NotFound")


def test_a_name_in_the_body_that_differs_from_the_path_is_400(api):
    status, body = api.apply(api.cm(), configmap({"a": "1"}, name="other"), fieldManager="alpha")
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "the name of the object (other) does not match the name on the URL (cm)",
    )


def test_force_on_a_non_apply_patch_is_422(api):
    api.apply(api.cm(), configmap({"a": "1"}), fieldManager="alpha")
    status, body = api.call(
        "PATCH",
        api.cm(),
        {"data": {"a": "2"}},
        content_type="application/merge-patch+json",
        force="true",
    )
    assert status_of(body)[:3] == (
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    )


# -- dry run ---------------------------------------------------------------------------------------


def test_a_dry_run_apply_answers_the_object_with_its_managed_fields_and_stores_nothing(api):
    status, body = api.apply(api.cm(), configmap({"a": "1"}), fieldManager="alpha", dryRun="All")
    assert status == 201
    assert managed(body) == [("alpha", "Apply", "v1", True, "FieldsV1", data_fields("a"), "")]
    status, _ = api.call("GET", api.cm())
    assert status == 404


# -- lists: containers by name ------------------------------------------------------------------


def _containers(body: dict) -> list:
    return [(c["name"], c["image"]) for c in body["spec"]["template"]["spec"]["containers"]]


def test_two_managers_containers_merge_by_name(api):
    api.apply(
        api.deployment(), deployment([{"name": "app", "image": "app:1"}]), fieldManager="alpha"
    )
    status, body = api.apply(
        api.deployment(), deployment([{"name": "sidecar", "image": "side:1"}]), fieldManager="beta"
    )
    assert status == 200
    assert _containers(body) == [("app", "app:1"), ("sidecar", "side:1")]
    beta = [m for m in managed(body) if m[0] == "beta"]
    assert beta == [
        (
            "beta",
            "Apply",
            "apps/v1",
            True,
            "FieldsV1",
            {
                "f:spec": {
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}
                            }
                        },
                    },
                }
            },
            "",
        )
    ]


def test_a_conflict_on_one_containers_image_names_that_container(api):
    api.apply(
        api.deployment(),
        deployment([{"name": "app", "image": "app:1"}, {"name": "side", "image": "s:1"}]),
        fieldManager="alpha",
    )
    status, body = api.apply(
        api.deployment(), deployment([{"name": "side", "image": "s:2"}]), fieldManager="beta"
    )
    assert status_of(body) == (
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "alpha": .spec.template.spec.containers[name="side"].image',
        [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "alpha"',
                "field": '.spec.template.spec.containers[name="side"].image',
            }
        ],
    )


def test_releasing_replicas_leaves_the_field_to_its_default(api):
    _, first = api.apply(
        api.deployment(),
        deployment([{"name": "app", "image": "app:1"}], replicas=3),
        fieldManager="alpha",
    )
    assert first["spec"]["replicas"] == 3
    status, body = api.apply(
        api.deployment(), deployment([{"name": "app", "image": "app:1"}]), fieldManager="alpha"
    )
    assert status == 200
    assert body["spec"]["replicas"] == 1
    assert "f:replicas" not in managed(body)[0][5]["f:spec"]


def test_container_ports_are_owned_by_port_and_protocol(api):
    status, body = api.apply(
        api.deployment(),
        deployment([{"name": "app", "image": "a", "ports": [{"containerPort": 80}]}]),
        fieldManager="alpha",
    )
    assert status == 201
    container = managed(body)[0][5]["f:spec"]["f:template"]["f:spec"]["f:containers"][
        'k:{"name":"app"}'
    ]
    assert container["f:ports"] == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
    }


# -- subresources ------------------------------------------------------------------------------


def _crd(api: Api) -> str:
    group = f"ssa{secrets.token_hex(3)}.example.com"
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer"},
                    "hosts": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set",
                    },
                    "routes": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["path"],
                        "items": {
                            "type": "object",
                            "required": ["path"],
                            "properties": {"path": {"type": "string"}, "to": {"type": "string"}},
                        },
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {"ready": {"type": "boolean"}, "replicas": {"type": "integer"}},
            },
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                }
            ],
        },
    }
    status, _ = api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201
    item = f"/apis/{group}/v1/namespaces/{api.ns}/widgets/w"
    # served: a Status answer (404 NotFound), no longer a plain "404 page not found"
    eventually(
        lambda: isinstance(api.call("GET", item)[1], dict), 30, what="the custom resource served"
    )
    return group


def _widget(group: str, **spec: Any) -> dict:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def test_custom_resources_merge_sets_and_map_lists_from_their_schema(api):
    group = _crd(api)
    path = f"/apis/{group}/v1/namespaces/{api.ns}/widgets/w"
    api.apply(
        path, _widget(group, hosts=["a"], routes=[{"path": "/", "to": "x"}]), fieldManager="alpha"
    )
    status, body = api.apply(
        path, _widget(group, hosts=["b"], routes=[{"path": "/b", "to": "y"}]), fieldManager="beta"
    )
    assert status == 200
    assert body["spec"] == {
        "hosts": ["a", "b"],
        "routes": [{"path": "/", "to": "x"}, {"path": "/b", "to": "y"}],
    }
    assert [m for m in managed(body) if m[0] == "beta"] == [
        (
            "beta",
            "Apply",
            f"{group}/v1",
            True,
            "FieldsV1",
            {
                "f:spec": {
                    "f:hosts": {'v:"b"': {}},
                    "f:routes": {'k:{"path":"/b"}': {".": {}, "f:path": {}, "f:to": {}}},
                }
            },
            "",
        )
    ]


def test_status_is_applied_through_the_status_subresource_only(api):
    group = _crd(api)
    path = f"/apis/{group}/v1/namespaces/{api.ns}/widgets/w"
    api.apply(path, _widget(group, replicas=1), fieldManager="alpha")
    with_status = dict(_widget(group, replicas=1), status={"ready": True})
    status, body = api.apply(path, with_status, fieldManager="alpha")
    assert status == 200 and "status" not in body  # the main resource ignores status
    status, body = api.apply(
        path + "/status",
        {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "labels": {"ignored": "here"}},
            "status": {"ready": True},
        },
        fieldManager="status-writer",
    )
    assert status == 200
    assert body["status"] == {"ready": True} and body["spec"] == {"replicas": 1}
    assert "labels" not in body["metadata"]  # /status writes the status only, and owns only it
    assert [m for m in managed(body) if m[0] == "status-writer"] == [
        (
            "status-writer",
            "Apply",
            f"{group}/v1",
            True,
            "FieldsV1",
            {"f:status": {"f:ready": {}}},
            "status",
        )
    ]


def test_replicas_are_applied_through_the_scale_subresource(api):
    api.apply(
        api.deployment(),
        deployment([{"name": "app", "image": "app:1"}], replicas=1),
        fieldManager="alpha",
    )
    scale = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web"},
        "spec": {"replicas": 4},
    }
    status, body = api.apply(api.deployment() + "/scale", scale, fieldManager="autoscaler")
    assert status == 409
    assert (
        status_of(body)[2] == 'Apply failed with 1 conflict: conflict with "alpha": .spec.replicas'
    )
    status, body = api.apply(
        api.deployment() + "/scale", scale, fieldManager="autoscaler", force="true"
    )
    assert status == 200
    assert body["kind"] == "Scale" and body["spec"] == {"replicas": 4}
    _, parent = api.call("GET", api.deployment())
    assert parent["spec"]["replicas"] == 4
    assert [m for m in managed(parent) if m[0] == "autoscaler"] == [
        (
            "autoscaler",
            "Apply",
            "apps/v1",
            False,
            "FieldsV1",
            {"f:spec": {"f:replicas": {}}},
            "scale",
        )
    ]  # no time: see below


def test_an_update_of_the_scale_is_recorded_on_the_parent_without_a_time(api):
    api.call(
        "POST",
        f"/apis/apps/v1/namespaces/{api.ns}/deployments",
        deployment([{"name": "app", "image": "a"}]),
        fieldManager="creator",
    )
    scale = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web"},
        "spec": {"replicas": 3},
    }
    assert api.call("PUT", api.deployment() + "/scale", scale, fieldManager="scaler")[0] == 200
    _, parent = api.call("GET", api.deployment())
    assert [m[:4] + m[5:] for m in managed(parent)] == [
        (
            "scaler",
            "Update",
            "apps/v1",
            False,
            {"f:spec": {"f:replicas": {}}},
            "scale",
        ),  # no time sorts first
        ("creator", "Update", "apps/v1", True, managed(parent)[1][5], ""),
    ]


def test_an_update_that_creates_owns_what_the_server_defaulted(api):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}]}]},
    }
    status, body = api.call(
        "POST", f"/api/v1/namespaces/{api.ns}/pods", pod, fieldManager="creator"
    )
    assert status == 201
    assert managed(body) == [
        (
            "creator",
            "Update",
            "v1",
            True,
            "FieldsV1",
            {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"c"}': {
                            ".": {},
                            "f:env": {
                                ".": {},
                                'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}},
                            },
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {},
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                }
            },
            "",
        )
    ]


def test_a_custom_resource_created_by_an_update_owns_its_new_maps(api):
    group = _crd(api)
    widget = _widget(group, replicas=2)
    widget["metadata"]["labels"] = {"a": "b"}
    status, body = api.call(
        "POST", f"/apis/{group}/v1/namespaces/{api.ns}/widgets", widget, fieldManager="creator"
    )
    assert status == 201
    assert managed(body) == [
        (
            "creator",
            "Update",
            f"{group}/v1",
            True,
            "FieldsV1",
            {
                "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                "f:spec": {".": {}, "f:replicas": {}},
            },
            "",
        )
    ]


# -- the client ------------------------------------------------------------------------------------


def test_the_client_applies_raises_a_typed_conflict_and_forces(k8s):
    from pyinformers.api import ApplyConflict, Conflict, ResourceClient
    from pyinformers.resources import CONFIGMAPS

    configmaps = ResourceClient(k8s.api_client(), CONFIGMAPS)
    desired = configmap({"a": "1", "b": "2"}, namespace=k8s.namespace)
    created = configmaps.apply(desired, field_manager="alpha")
    assert created["data"] == {"a": "1", "b": "2"}
    assert (
        configmaps.apply(desired, field_manager="alpha")["metadata"]["resourceVersion"]
        == (created["metadata"]["resourceVersion"])
    )
    other = configmap({"a": "9", "b": "8"}, namespace=k8s.namespace)
    with pytest.raises(ApplyConflict) as caught:
        configmaps.apply(other, field_manager="beta")
    assert isinstance(caught.value, Conflict)
    assert caught.value.conflicts == [("alpha", ".data.a"), ("alpha", ".data.b")]
    forced = configmaps.apply(other, field_manager="beta", force=True)
    assert forced["data"] == {"a": "9", "b": "8"}
    assert [e["manager"] for e in forced["metadata"]["managedFields"]] == ["beta"]


def test_the_client_needs_a_field_manager_and_dry_runs_store_nothing(k8s):
    from pyinformers.api import NotFound, ResourceClient
    from pyinformers.resources import CONFIGMAPS

    configmaps = ResourceClient(k8s.api_client(), CONFIGMAPS)
    with pytest.raises(ValueError, match="field manager"):
        configmaps.apply(configmap({"a": "1"}, namespace=k8s.namespace))
    defaulted = ResourceClient(k8s.api_client(), CONFIGMAPS, field_manager="mine")
    answer = defaulted.apply(configmap({"a": "1"}, namespace=k8s.namespace), dry_run=True)
    assert answer["metadata"]["managedFields"][0]["manager"] == "mine"
    with pytest.raises(NotFound):
        configmaps.get("cm", k8s.namespace)


def test_the_client_applies_status_through_the_subresource(k8s):
    from pyinformers.api import Resource, ResourceClient

    api = Api(k8s)
    group = _crd(api)
    widgets = ResourceClient(
        k8s.api_client(), Resource(group, "v1", "widgets", "Widget"), field_manager="ctl"
    )
    widgets.apply({"metadata": {"name": "w", "namespace": k8s.namespace}, "spec": {"replicas": 1}})
    answer = widgets.apply_status(
        {"metadata": {"name": "w", "namespace": k8s.namespace}, "status": {"ready": True}}
    )
    assert answer["status"] == {"ready": True}
    assert [
        (e["manager"], e.get("subresource", "")) for e in answer["metadata"]["managedFields"]
    ] == [
        ("ctl", ""),
        ("ctl", "status"),
    ]


def test_conflicting_applies_from_many_threads_leave_one_owner_and_nothing_half_applied(api):
    import threading

    answers: list[int] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        status, _ = Api.apply(
            api, api.cm(), configmap({"a": str(i), f"k{i}": "x"}), fieldManager=f"m{i}"
        )
        with lock:
            answers.append(status)

    threads = [threading.Thread(target=one, args=(i,), name=f"test-apply-{i}") for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(answers) == [201, 409, 409, 409, 409, 409]
    _, final = api.call("GET", api.cm())
    (entry,) = final["metadata"]["managedFields"]
    winner = entry["manager"][1:]
    assert final["data"] == {"a": winner, f"k{winner}": "x"}


def test_a_crd_with_an_unknown_list_type_is_refused(api):
    group = f"ssa{secrets.token_hex(3)}.example.com"
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "hosts": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "bag",
                    }
                },
            }
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }
    status, body = api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert (status, body["reason"]) == (422, "Invalid")
    assert [c["field"] for c in body["details"]["causes"]] == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[hosts].x-kubernetes-list-type"
    ]
