"""Admission handlers: what they are given, how their answers become AdmissionReview responses."""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

import orjson
import pytest

from pyinformers.api import Resource
from pyinformers.webhook import (
    AdmissionRequest,
    Allowed,
    Denied,
    Operation,
    ReviewError,
    Webhooks,
    review,
)

FOOS = Resource("samplecontroller.k8s.io", "v1alpha1", "foos", "Foo")
SECRET_DATA = "c2VjcmV0LWRhdGEtdGhhdC1tdXN0LW5vdC1sZWFr"


def _foo(replicas: int | None = None, name: str = "example-foo") -> dict[str, Any]:
    spec: dict[str, Any] = {"deploymentName": name}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": "f", "namespace": "ns"},
        "spec": spec,
    }


def _review(
    operation: str = "CREATE",
    obj: Any = None,
    old: Any = None,
    *,
    uid: str = "uid-1",
    dry_run: bool = False,
) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "operation": operation,
            "name": "f",
            "namespace": "ns",
            "dryRun": dry_run,
            "kind": {"group": FOOS.group, "version": FOOS.version, "kind": "Foo"},
            "resource": {"group": FOOS.group, "version": FOOS.version, "resource": "foos"},
            "requestKind": {"group": FOOS.group, "version": FOOS.version, "kind": "Foo"},
            "requestResource": {"group": FOOS.group, "version": FOOS.version, "resource": "foos"},
            "userInfo": {
                "username": "alice",
                "uid": "u",
                "groups": ["system:authenticated"],
                "extra": {"k": ["v"]},
            },
            "object": obj,
            "oldObject": old,
        },
    }


def _patch(response: dict) -> list:
    return orjson.loads(base64.b64decode(response["response"]["patch"]))


def _webhooks() -> Webhooks:
    return Webhooks("sample-controller")


def test_a_mutating_handler_that_edits_the_object_in_place_answers_with_the_json_patch() -> None:
    hooks = _webhooks()

    @hooks.mutating(FOOS)
    def default(request: AdmissionRequest) -> None:
        request.object["spec"].setdefault("replicas", 1)

    webhook = hooks.admission[0]
    sent = _foo()
    answer = review(webhook, _review(obj=sent))
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == "uid-1" and answer["response"]["allowed"] is True
    assert answer["response"]["patchType"] == "JSONPatch"
    assert _patch(answer) == [{"op": "add", "path": "/spec/replicas", "value": 1}]
    assert (
        "replicas" not in sent["spec"]
    )  # the request's object is the handler's copy, not the review's


def test_a_mutating_handler_may_return_the_changed_object_instead() -> None:
    hooks = _webhooks()
    hooks.mutating(FOOS, name="labels.foos.example.com")(
        lambda request: {
            **request.object,
            "metadata": {**request.object["metadata"], "labels": {"a/b": "c"}},
        }
    )
    answer = review(hooks.admission[0], _review(obj=_foo(3)))
    assert _patch(answer) == [{"op": "add", "path": "/metadata/labels", "value": {"a/b": "c"}}]


def test_a_mutating_handler_that_changes_nothing_answers_without_a_patch() -> None:
    hooks = _webhooks()
    hooks.mutating(FOOS)(lambda request: None)
    response = review(hooks.admission[0], _review(obj=_foo(2)))["response"]
    assert response == {"uid": "uid-1", "allowed": True}


def test_the_handler_sees_operation_old_object_user_and_dry_run() -> None:
    hooks = _webhooks()
    seen: list[AdmissionRequest] = []
    hooks.validating(FOOS, operations=["UPDATE"])(seen.append)
    review(hooks.admission[0], _review("UPDATE", _foo(2), _foo(1), dry_run=True))
    (request,) = seen
    assert request.operation is Operation.UPDATE and request.dry_run is True
    assert request.old_object["spec"]["replicas"] == 1 and request.object["spec"]["replicas"] == 2
    assert request.user_info.username == "alice" and request.user_info.groups == (
        "system:authenticated",
    )
    assert request.user_info.extra == {"k": ("v",)}
    assert request.resource == FOOS and (request.namespace, request.name) == ("ns", "f")


def test_a_denial_carries_its_message_reason_code_and_warnings() -> None:
    hooks = _webhooks()

    @hooks.validating(FOOS)
    def check(request: AdmissionRequest) -> Denied:
        request.warn("spec.replicas   is\nlarge")
        return Denied(
            "spec.deploymentName: Invalid value", reason="Invalid", code=422, warnings=["w2"]
        )

    response = review(hooks.admission[0], _review(obj=_foo()))["response"]
    assert response["allowed"] is False
    assert response["status"] == {
        "code": 422,
        "reason": "Invalid",
        "message": "spec.deploymentName: Invalid value",
    }
    assert response["warnings"] == ["spec.replicas is large", "w2"]


def test_an_admission_with_warnings_keeps_them() -> None:
    hooks = _webhooks()
    hooks.validating(FOOS)(lambda request: Allowed(warnings=["deprecated field"]))
    assert review(hooks.admission[0], _review(obj=_foo()))["response"]["warnings"] == [
        "deprecated field"
    ]


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_handler_that_raises_answers_as_its_failure_policy_expects_and_logs_no_data(
    policy: str, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = _webhooks()

    @hooks.validating(FOOS, failure_policy=policy)
    def broken(request: AdmissionRequest) -> None:
        raise ValueError(f"bad object {request.object}")

    caplog.set_level(logging.DEBUG, logger="pyinformers")
    obj = _foo()
    obj["data"] = {"password": SECRET_DATA}
    response = review(hooks.admission[0], _review(obj=obj, uid="uid-raise"))["response"]
    if policy == "Fail":
        assert response["allowed"] is False and response["status"]["code"] == 500
        assert "uid-raise" in response["status"]["message"]
    else:
        assert response["allowed"] is True and "patch" not in response
        assert "ignored" in response["warnings"][0]
    assert "uid-raise" in caplog.text and "ValueError" in caplog.text
    assert SECRET_DATA not in caplog.text and SECRET_DATA not in orjson.dumps(response).decode()


def test_a_handler_that_overruns_its_deadline_is_answered_by_its_failure_policy() -> None:
    hooks = _webhooks()
    release = threading.Event()
    hooks.mutating(FOOS, failure_policy="Ignore", timeout_seconds=1)(
        lambda request: release.wait(10)
    )
    try:
        response = review(hooks.admission[0], _review(obj=_foo()), deadline=0.05)["response"]
    finally:
        release.set()
    assert response["allowed"] is True and "timed out" in response["warnings"][0]


def test_a_validating_handler_returning_an_object_is_a_handler_failure() -> None:
    hooks = _webhooks()
    hooks.validating(FOOS)(lambda request: request.object)
    response = review(hooks.admission[0], _review(obj=_foo()))["response"]
    assert response["allowed"] is False and response["status"]["code"] == 500


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        ([], "not a JSON object"),
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "ConversionReview"},
            "expected kind AdmissionReview",
        ),
        (
            {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}},
            "not served",
        ),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "has no request"),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"uid": "u"},
            },
            "operation",
        ),
    ],
)
def test_a_malformed_review_is_a_review_error_naming_what_is_wrong(doc: Any, reason: str) -> None:
    hooks = _webhooks()
    hooks.validating(FOOS)(lambda request: None)
    with pytest.raises(ReviewError, match=reason):
        review(hooks.admission[0], doc)


def test_handle_answers_200_with_the_review_400_for_bad_bodies_and_404_for_unknown_paths() -> None:
    hooks = _webhooks()
    hooks.validating(FOOS)(lambda request: Denied("no"))
    path = hooks.admission[0].path
    assert path == "/validate/validate-foos.samplecontroller.k8s.io"
    status, content_type, body = hooks.handle(path, orjson.dumps(_review(obj=_foo())))
    assert (status, content_type) == (200, "application/json")
    assert orjson.loads(body)["response"]["status"]["message"] == "no"
    status, _, body = hooks.handle(path, b"{not json")
    assert status == 400 and body.startswith(b"the body is not JSON")
    status, _, body = hooks.handle(path, b'{"kind": "AdmissionReview", "apiVersion": "v0"}')
    assert status == 400 and b"not served" in body
    assert hooks.handle("/validate/nothing", b"{}")[0] == 404


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "short.name"}, "at least three segments"),
        ({"failure_policy": "Sometimes"}, "not Fail or Ignore"),
        ({"timeout_seconds": 31}, "1-30"),
        ({"operations": ["PATCH"]}, "operation 'PATCH'"),
        ({"scope": "Global"}, "scope"),
        ({"side_effects": "Some"}, "side_effects"),
    ],
)
def test_a_bad_registration_is_a_one_line_value_error(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _webhooks().validating(FOOS, **options)(lambda request: None)


def test_a_webhook_name_is_registered_once() -> None:
    hooks = _webhooks()
    hooks.validating(FOOS)(lambda request: None)
    with pytest.raises(ValueError, match="registered twice"):
        hooks.validating(FOOS)(lambda request: None)
