"""The Foo custom resource of kubernetes/sample-controller, as Python types.

``artifacts/crd.yaml`` is generated from these (``python -m pyinformers crd
samples.sample_controller.types``); tests/samples fails when the two drift.
The controller reads Foos through a ``Lister[Foo]``, so a typo in a key is a
type error, not a silent ``None``.
"""

from typing import Annotated

from typing_extensions import NotRequired, TypedDict

from pyinformers import crd


class FooSpec(TypedDict):
    deploymentName: str
    """Name of the Deployment this Foo owns."""
    replicas: NotRequired[Annotated[int, crd.Minimum(0), crd.Maximum(10)]]
    """Desired replicas of that Deployment."""


class FooStatus(TypedDict, total=False):
    availableReplicas: int
    """Available replicas of the Deployment, copied from its status."""


class Foo(crd.Object):
    spec: NotRequired[FooSpec]
    status: NotRequired[FooStatus]


FOO_CRD = crd.CustomResource(
    group="samplecontroller.k8s.io",
    kind="Foo",
    versions=[
        crd.Version(
            "v1alpha1",
            Foo,
            printer_columns=[
                crd.PrinterColumn("Deployment", ".spec.deploymentName"),
                crd.PrinterColumn("Desired", ".spec.replicas"),
                crd.PrinterColumn("Available", ".status.availableReplicas"),
            ],
        )
    ],
    # samplecontroller.k8s.io is under k8s.io, a protected group: the API server refuses
    # the CRD without this annotation (upstream's sample-controller carries the same).
    annotations={"api-approved.kubernetes.io": "unapproved, experimental-only"},
)
