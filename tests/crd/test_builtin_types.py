"""The built-in types: pyinformers.k8s matches the shipped OpenAPI extract, and their CRD schemas are structural."""

import re
from pathlib import Path
from typing import Any

import pytest

from pyinformers import crd, k8s
from pyinformers.crd._builtins import builtin_types_source
from pyinformers.crd._openapi import builtin_schema, definitions, kubernetes_version
from tests.crd.cronjob_types import CRONJOB_CRD

K8S = Path(k8s.__file__)
_ALLOWED = {
    "description",
    "type",
    "format",
    "default",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "enum",
    "required",
    "nullable",
    "properties",
    "items",
    "additionalProperties",
    "anyOf",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
}


def test_the_checked_in_module_is_what_the_extract_generates() -> None:
    assert K8S.read_text() == builtin_types_source(), "run python hack/crd/openapi.py"
    assert k8s.KUBERNETES_VERSION == kubernetes_version() == "v1.36.3"


def test_every_kind_of_the_resource_catalog_has_a_typed_view() -> None:
    from pyinformers.resources import ALL

    for resource in ALL:
        assert resource.kind in k8s.__openapi_definitions__ or f"EventsV1{resource.kind}" in vars(
            k8s
        ), resource


def _check_structural(node: Any, path: str) -> None:
    assert isinstance(node, dict), path
    assert set(node) <= _ALLOWED, (path, set(node) - _ALLOWED)
    assert (
        "type" in node
        or node.get("x-kubernetes-int-or-string")
        or node.get("x-kubernetes-preserve-unknown-fields")
    ), path
    for key, sub in (node.get("properties") or {}).items():
        _check_structural(sub, f"{path}.{key}")
    if "items" in node:
        _check_structural(node["items"], f"{path}[*]")
    if isinstance(node.get("additionalProperties"), dict):
        _check_structural(node["additionalProperties"], f"{path}{{*}}")
    if node.get("x-kubernetes-list-type") == "map":
        items = node["items"]
        for key in node["x-kubernetes-list-map-keys"]:
            assert key in (items.get("required") or ()) or "default" in items["properties"][key], (
                path,
                key,
            )


def _reaches(name: str, target: str) -> bool:
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current not in seen:
            seen.add(current)
            todo += re.findall(r"'\$ref': '([^']+)'", str(definitions().get(current, {})))
    return False


@pytest.mark.parametrize("name", sorted(k8s.__openapi_definitions__.values()))
def test_each_builtin_schema_is_structural_with_no_ref_left(name: str) -> None:
    if _reaches(name, "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"):
        # JSONSchemaProps holds itself: no CRD can embed what reaches it
        with pytest.raises(crd.SchemaError, match="recursive built-in type"):
            builtin_schema(name)
        return
    schema = builtin_schema(name)
    _check_structural(schema, name)


def test_a_template_keeps_the_metadata_a_template_may_set() -> None:
    template = builtin_schema("io.k8s.api.core.v1.PodTemplateSpec")
    assert set(template["properties"]["metadata"]["properties"]) == {
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    }
    port = builtin_schema("io.k8s.api.core.v1.ContainerPort")["properties"]
    assert (
        port["protocol"]["default"] == "TCP" and "default" not in port["hostIP"]
    )  # no Go zero values
    assert (
        builtin_schema("io.k8s.apimachinery.pkg.api.resource.Quantity")[
            "x-kubernetes-int-or-string"
        ]
        is True
    )


def test_a_cronjob_embeds_the_full_job_template_spec() -> None:
    schema = CRONJOB_CRD.definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    job = schema["properties"]["spec"]["properties"]["jobTemplate"]
    assert job["description"] == "Specifies the job that will be created when executing a CronJob."
    containers = job["properties"]["spec"]["properties"]["template"]["properties"]["spec"][
        "properties"
    ]["containers"]
    assert containers["items"]["required"] == ["name"]
    assert "'$ref'" not in str(schema)
    assert len(definitions()) > 200
