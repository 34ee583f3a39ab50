"""The samples' CRDs are generated from their types: a checked-in CRD that drifts from its types fails here."""

from pathlib import Path

import pytest
import yaml

from pyinformers.crd._cli import crd_command

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

#: The Foo schema as it was written by hand before the types existed (the generated one must equal it).
HAND_WRITTEN_FOO_SCHEMA = yaml.safe_load("""
type: object
properties:
  spec:
    type: object
    required: [deploymentName]
    properties:
      deploymentName:
        type: string
        description: Name of the Deployment this Foo owns.
      replicas:
        type: integer
        minimum: 0
        maximum: 10
        description: Desired replicas of that Deployment.
  status:
    type: object
    properties:
      availableReplicas:
        type: integer
        description: Available replicas of the Deployment, copied from its status.
""")


@pytest.mark.parametrize("sample", ["sample_controller", "mydeployment"])
def test_the_checked_in_crd_is_what_the_sample_types_generate(sample: str) -> None:
    generated = crd_command([f"samples.{sample}.types"])
    checked_in = (SAMPLES / sample / "artifacts" / "crd.yaml").read_text()
    assert checked_in == generated, f"regenerate: python -m pyinformers crd samples.{sample}.types"


def test_the_generated_foo_schema_equals_the_hand_written_one() -> None:
    foo = yaml.safe_load((SAMPLES / "sample_controller" / "artifacts" / "crd.yaml").read_text())
    (version,) = foo["spec"]["versions"]
    assert version["schema"]["openAPIV3Schema"] == HAND_WRITTEN_FOO_SCHEMA
    assert version["subresources"] == {"status": {}}
    assert [c["jsonPath"] for c in version["additionalPrinterColumns"]] == [
        ".spec.deploymentName",
        ".spec.replicas",
        ".status.availableReplicas",
    ]
