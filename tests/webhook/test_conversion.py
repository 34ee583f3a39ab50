"""Hub and spoke conversion behind a ConversionReview: versions and metadata kept right."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.webhook import ConversionError, ReviewError, Webhooks, review_conversion

GROUP = "example.com"


def _hooks() -> Webhooks:
    """v2 is the hub: spec.size; v1 has spec.replicas; v3 has spec.scale.count."""
    hooks = Webhooks("shapes")
    conversion = hooks.conversion(GROUP, "Shape", hub="v2")

    @conversion.to_hub("v1")
    def v1_up(obj: dict[str, Any]) -> None:
        obj["spec"] = {"size": obj["spec"].pop("replicas")}

    @conversion.from_hub("v1")
    def v1_down(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "spec": {"replicas": obj["spec"]["size"]}}

    conversion.spoke(
        "v3",
        to_hub=lambda o: {**o, "spec": {"size": o["spec"]["scale"]["count"]}},
        from_hub=lambda o: {**o, "spec": {"scale": {"count": o["spec"]["size"]}}},
    )
    return hooks


def _shape(version: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Shape",
        "metadata": {
            "name": "s",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "7",
            **metadata,
        },
        "spec": spec,
    }


def _request(desired: str, *objects: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "conv-1", "desiredAPIVersion": desired, "objects": list(objects)},
    }


SPECS = {
    "v1": lambda n: {"replicas": n},
    "v2": lambda n: {"size": n},
    "v3": lambda n: {"scale": {"count": n}},
}


@given(st.sampled_from(sorted(SPECS)), st.sampled_from(sorted(SPECS)), st.integers(0, 100))
def test_any_version_converts_to_any_other_through_the_hub(
    source: str, target: str, n: int
) -> None:
    (conversion,) = _hooks().conversions
    out = conversion.convert(_shape(source, SPECS[source](n)), target)
    assert out == _shape(target, SPECS[target](n))


def test_a_review_converts_every_object_and_keeps_metadata_but_labels_and_annotations() -> None:
    hooks = _hooks()
    (conversion,) = hooks.conversions

    @conversion.from_hub("v1")
    def relabel(obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "wrong/v9",
            "kind": "Other",
            "spec": {"replicas": obj["spec"]["size"]},
            "metadata": {"name": "renamed", "labels": {"converted": "yes"}},
        }

    answer = review_conversion(
        hooks.conversions,
        _request(
            f"{GROUP}/v1",
            _shape("v2", {"size": 1}, labels={"old": "x"}),
            _shape("v1", {"replicas": 2}),
        ),
    )
    response = answer["response"]
    assert answer["kind"] == "ConversionReview" and response["uid"] == "conv-1"
    assert response["result"] == {"status": "Success"}
    first, second = response["convertedObjects"]
    assert first == _shape("v1", {"replicas": 1}, labels={"converted": "yes"})
    assert second == _shape("v1", {"replicas": 2})


def test_an_unknown_version_or_kind_fails_the_review_with_a_message() -> None:
    hooks = _hooks()
    response = review_conversion(
        hooks.conversions, _request(f"{GROUP}/v7", _shape("v1", {"replicas": 1}))
    )
    assert response["response"]["result"]["status"] == "Failure"
    assert "has no version 'v7'" in response["response"]["result"]["message"]
    other = {**_shape("v1", {}), "kind": "Circle"}
    response = review_conversion(hooks.conversions, _request(f"{GROUP}/v2", other))
    assert "no conversion for 'Circle'" in response["response"]["result"]["message"]
    with pytest.raises(ConversionError):
        hooks.conversions[0].convert(_shape("v4", {}), "v1")


def test_a_conversion_that_raises_fails_the_review_and_logs_the_uid_not_the_data(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hooks = Webhooks("shapes")
    conversion = hooks.conversion(GROUP, "Shape", hub="v2")
    conversion.spoke("v1", to_hub=lambda o: o["spec"]["missing"], from_hub=lambda o: o)
    response = review_conversion(
        hooks.conversions, _request(f"{GROUP}/v2", _shape("v1", {"secret": "hunter2"}))
    )
    assert response["response"]["result"]["status"] == "Failure"
    assert "conv-1" in response["response"]["result"]["message"]
    assert "conv-1" in caplog.text and "KeyError" in caplog.text and "hunter2" not in caplog.text


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        ({"kind": "AdmissionReview"}, "expected kind ConversionReview"),
        ({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1beta1"}, "not served"),
        (
            {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1", "request": {}},
            "uid",
        ),
        (
            {
                "kind": "ConversionReview",
                "apiVersion": "apiextensions.k8s.io/v1",
                "request": {"uid": "u"},
            },
            "desired",
        ),
    ],
)
def test_a_malformed_conversion_review_is_a_review_error(doc: Any, reason: str) -> None:
    with pytest.raises(ReviewError, match=reason):
        review_conversion(_hooks().conversions, doc)


def test_a_spoke_needs_both_directions() -> None:
    hooks = Webhooks("shapes")
    hooks.conversion(GROUP, "Shape", hub="v2").to_hub("v1")(lambda o: o)
    with pytest.raises(ValueError, match="has to_hub but not the other direction"):
        hooks.check()
    with pytest.raises(ValueError, match="already converts through hub"):
        hooks.conversion(GROUP, "Shape", hub="v1")


@given(st.text(min_size=1, max_size=5), st.integers(1, 65535), st.integers(0, 9), st.booleans())
def test_mydeployment_versions_convert_both_ways_losing_nothing(
    image: str, port: int, replicas: int, with_port: bool
) -> None:
    from samples.mydeployment.webhooks import MYDEPLOYMENTS

    container = {"image": image, **({"port": port} if with_port else {})}
    beta = {
        "apiVersion": "demo.pyinformers.dev/v1beta1",
        "kind": "MyDeployment",
        "metadata": {"name": "m", "namespace": "ns"},
        "spec": {"container": container, "replicas": replicas},
    }
    alpha = MYDEPLOYMENTS.convert(beta, "v1alpha1")
    assert alpha["spec"] == {**container, "replicas": replicas}
    assert MYDEPLOYMENTS.convert(alpha, "v1beta1") == beta
