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


class MyDeploymentContainer(TypedDict):
    image: str
    """Container image to run."""
    port: NotRequired[Annotated[int, crd.Minimum(1), crd.Maximum(65535), crd.Default(80)]]
    """Port the container listens on, and the Service exposes."""


class MyDeploymentSpecV1beta1(TypedDict):
    container: MyDeploymentContainer
    replicas: NotRequired[Annotated[int, crd.Minimum(0), crd.Default(1)]]


class MyDeploymentV1beta1(crd.Object):
    """v1beta1: the image and port grouped under ``spec.container``; converted to and from
    v1alpha1 (stored, what the controller reads) by ``samples/mydeployment/webhooks.py``."""

    spec: NotRequired[MyDeploymentSpecV1beta1]
    status: NotRequired[MyDeploymentStatus]


MYDEPLOYMENT_CRD = crd.CustomResource(
    group="demo.pyinformers.dev",
    kind="MyDeployment",
    short_names=["myd"],
    versions=[
        crd.Version(
            "v1alpha1",
            MyDeployment,
            storage=True,
            printer_columns=[
                crd.PrinterColumn("Image", ".spec.image"),
                crd.PrinterColumn("Replicas", ".spec.replicas"),
                crd.PrinterColumn(
                    "Ready", '.status.conditions[?(@.type=="Ready")].status', type="string"
                ),
            ],
        ),
        crd.Version(
            "v1beta1",
            MyDeploymentV1beta1,
            printer_columns=[
                crd.PrinterColumn("Image", ".spec.container.image"),
                crd.PrinterColumn("Replicas", ".spec.replicas"),
            ],
        ),
    ],
)
