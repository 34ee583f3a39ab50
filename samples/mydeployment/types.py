"""MyDeployment: an image served at a port, with replicas, as Python types.

``artifacts/crd.yaml`` is generated from these (``python -m pyinformers crd
samples.mydeployment.types``); tests/samples fails when the two drift.
"""

from typing import Annotated

from typing_extensions import NotRequired, TypedDict

from pyinformers import crd


class MyDeploymentSpec(TypedDict):
    image: str
    """Container image to run."""
    replicas: NotRequired[Annotated[int, crd.Minimum(0), crd.Default(1)]]
    port: NotRequired[Annotated[int, crd.Minimum(1), crd.Maximum(65535), crd.Default(80)]]
    """Port the container listens on, and the Service exposes."""


class MyDeploymentCondition(TypedDict):
    type: str
    status: str
    reason: NotRequired[str]
    message: NotRequired[str]
    lastTransitionTime: NotRequired[crd.Time]
    observedGeneration: NotRequired[int]


class MyDeploymentStatus(TypedDict, total=False):
    observedGeneration: int
    availableReplicas: int
    conditions: list[MyDeploymentCondition]


class MyDeployment(crd.Object):
    spec: NotRequired[MyDeploymentSpec]
    status: NotRequired[MyDeploymentStatus]


MYDEPLOYMENT_CRD = crd.CustomResource(
    group="demo.pyinformers.dev",
    kind="MyDeployment",
    short_names=["myd"],
    versions=[
        crd.Version(
            "v1alpha1",
            MyDeployment,
            printer_columns=[
                crd.PrinterColumn("Image", ".spec.image"),
                crd.PrinterColumn("Replicas", ".spec.replicas"),
                crd.PrinterColumn(
                    "Ready", '.status.conditions[?(@.type=="Ready")].status', type="string"
                ),
            ],
        )
    ],
)
