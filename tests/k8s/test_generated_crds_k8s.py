"""Every CRD the generators write is accepted by the API server (a strict, server-side dry run), on either server."""

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from typing_extensions import TypedDict

from pyinformers import crd
from pyinformers import k8s as types
from pyinformers.api import Invalid, Resource, ResourceClient
from pyinformers.controller import install_crd
from pyinformers.crd._codegen import types_module
from samples.mydeployment.types import MYDEPLOYMENT_CRD
from samples.sample_controller.types import FOO_CRD
from tests.crd.cronjob_types import CRONJOB_CRD
from tests.support.crd_modules import load_module

ROOT = Path(__file__).resolve().parents[2]


class EmbedsBuiltins(TypedDict, total=False):
    pod: types.PodTemplateSpec
    deployment: types.DeploymentSpec
    service: types.ServiceSpec
    claim: types.PersistentVolumeClaimSpec
    resources: types.ResourceRequirements
    ref: types.ObjectReference
    secret: types.LocalObjectReference
    conditions: list[types.Condition]
    selector: types.LabelSelector
    tolerations: list[types.Toleration]
    cpu: types.Quantity
    port: types.IntOrString


class Builtins(crd.Object):
    spec: EmbedsBuiltins


BUILTINS_CRD = crd.CustomResource(
    group="example.com", kind="Builtins", versions=[crd.Version("v1", Builtins)]
)


def _certificate_round_trip() -> dict[str, Any]:
    original = next(yaml.safe_load_all((ROOT / "tests/crd/data/certificates.yaml").read_text()))
    module = load_module(types_module(original))
    return module.CERTIFICATE_CRD.definition()


CRDS = {
    "foo": FOO_CRD.definition,
    "mydeployment": MYDEPLOYMENT_CRD.definition,
    "cronjob-with-job-template": CRONJOB_CRD.definition,
    "builtins": BUILTINS_CRD.definition,
    "certificate-through-types": _certificate_round_trip,
}


@pytest.mark.parametrize("name", sorted(CRDS))
def test_the_server_accepts_each_generated_crd_in_a_strict_dry_run(k8s: Any, name: str) -> None:
    definition = CRDS[name]()
    # A group of its own: on a shared real control plane another test may have installed
    # the same CRD already, and even a dry-run create of an existing name is a 409.
    group = f"dryrun-{uuid.uuid4().hex[:8]}.{definition['spec']['group']}"
    definition["spec"]["group"] = group
    definition["metadata"]["name"] = f"{definition['spec']['names']['plural']}.{group}"
    api = k8s_client.ApiextensionsV1Api(k8s.api_client())
    response = api.create_custom_resource_definition(
        definition, dry_run="All", field_validation="Strict", _preload_content=False
    )
    assert response.status == 201
    assert response.headers.get("Warning") is None


def test_a_cronjob_keeps_its_job_template_and_refuses_a_bad_one(k8s: Any) -> None:
    api = k8s.api_client()
    # A group of its own: samples/cronjob installs a CronJob CRD of the same name with another
    # schema on the shared real control plane, and install_crd keeps an existing one.
    definition = CRONJOB_CRD.definition()
    group = f"t{uuid.uuid4().hex[:8]}.{definition['spec']['group']}"
    definition["spec"]["group"] = group
    definition["metadata"]["name"] = f"{definition['spec']['names']['plural']}.{group}"
    install_crd(api, definition)
    cronjobs = ResourceClient(api, Resource.from_crd(definition))
    template = {
        "metadata": {"labels": {"app": "nightly"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "nightly"}},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [
                        {
                            "name": "run",
                            "image": "busybox",
                            "resources": {"limits": {"cpu": "500m"}},
                        }
                    ],
                },
            }
        },
    }
    body = {
        "apiVersion": f"{group}/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": k8s.namespace},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": template},
    }
    created = cronjobs.create(body)
    job = created["spec"]["jobTemplate"]
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "nightly"}
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m"}
    }
    assert created["spec"]["concurrencyPolicy"] == "Allow"  # the schema's default
    bad = dict(body, metadata={"name": "bad", "namespace": k8s.namespace})
    bad["spec"] = dict(
        body["spec"], jobTemplate={"spec": {"template": {"spec": {"containers": [{"name": 3}]}}}}
    )
    with pytest.raises(Invalid) as caught:
        cronjobs.create(bad)
    assert "jobTemplate.spec.template.spec.containers[0].name" in str(caught.value)
