"""CRDs become Python modules of TypedDicts whose CustomResource generates the same CRD again."""

from pathlib import Path
from typing import Any

import pytest
import yaml
from typing_extensions import is_typeddict

from pyinformers import crd
from pyinformers.crd._codegen import types_module
from tests.support.crd_modules import load_module, normalized

DATA = Path(__file__).parent / "data"
SAMPLES = Path(__file__).parents[2] / "samples"


def _crd(path: Path) -> dict[str, Any]:
    return next(
        d
        for d in yaml.safe_load_all(path.read_text())
        if d and d.get("kind") == "CustomResourceDefinition"
    )


@pytest.mark.parametrize(
    "path",
    [
        DATA / "certificates.yaml",
        SAMPLES / "sample_controller/artifacts/crd.yaml",
        SAMPLES / "mydeployment/artifacts/crd.yaml",
    ],
    ids=lambda p: p.parent.parent.name,
)
def test_a_crd_becomes_types_whose_custom_resource_gives_the_same_crd(path: Path) -> None:
    original = _crd(path)
    module = load_module(types_module(original))
    (resource,) = [v for v in vars(module).values() if isinstance(v, crd.CustomResource)]
    assert normalized(resource.definition()) == normalized(original)


def test_types_are_named_after_the_kind_and_the_path() -> None:
    module = load_module(types_module(_crd(DATA / "certificates.yaml")))
    for name in (
        "Certificate",
        "CertificateSpec",
        "CertificateStatus",
        "CertificateSpecIssuerRef",
        "CertificateSpecPrivateKey",
        "CertificateStatusConditionsItem",
        "CertificateSpecKeystoresPkcs12PasswordSecretRef",
    ):
        assert is_typeddict(getattr(module, name)), name
    assert module.Certificate.__required_keys__ == {"apiVersion", "kind", "metadata", "spec"}
    assert module.CertificateSpec.__required_keys__ == {"issuerRef", "secretName"}
    resource = module.CERTIFICATES
    assert (resource.group, resource.version, resource.plural, resource.kind) == (
        "certs.example.io",
        "v1",
        "certificates",
        "Certificate",
    )


def test_enums_become_literals_and_optional_fields_not_required() -> None:
    source = types_module(_crd(DATA / "certificates.yaml"))
    assert "algorithm: NotRequired[Literal['RSA', 'ECDSA', 'Ed25519']]" in source
    assert (
        "rotationPolicy: NotRequired[Annotated[Literal['Never', 'Always'], crd.Default('Never')]]"
        in source
    )
    assert "notBefore: NotRequired[Optional[Annotated[str, crd.Format('date-time')]]]" in source


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda c: c["spec"]["versions"][0].pop("schema"), "version v1: no schema.openAPIV3Schema"),
        (
            lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"
            ]["commonName"].pop("type"),
            "not a structural schema: .spec.commonName has no type",
        ),
        (
            lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"
            ]["dnsNames"].pop("items"),
            "not a structural schema: array .spec.dnsNames has no items",
        ),
        (lambda c: c.update(kind="Deployment"), "not a CustomResourceDefinition"),
    ],
)
def test_a_crd_without_a_structural_schema_fails_with_one_line(mutate: Any, message: str) -> None:
    broken = _crd(DATA / "certificates.yaml")
    mutate(broken)
    with pytest.raises(crd.SchemaError) as caught:
        types_module(broken)
    assert message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_keys_that_are_not_identifiers_use_the_functional_typeddict_form() -> None:
    c = _crd(SAMPLES / "sample_controller/artifacts/crd.yaml")
    props = c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    props["class"] = {"type": "string", "description": "a keyword"}
    props["x-y"] = {"type": "integer"}
    source = types_module(c)
    assert "FooSpec = TypedDict('FooSpec', {" in source
    module = load_module(source)
    assert {"class", "x-y"} <= set(module.FooSpec.__annotations__)
    (resource,) = [v for v in vars(module).values() if isinstance(v, crd.CustomResource)]
    assert normalized(resource.definition()) == normalized(c)


def test_each_served_version_gets_its_types_and_resource_the_storage_one_plain_names() -> None:
    two = _crd(DATA / "certificates.yaml")
    (v1,) = two["spec"]["versions"]
    old = {
        **v1,
        "name": "v1beta1",
        "storage": False,
        "deprecated": True,
        "deprecationWarning": "use v1",
    }
    two["spec"]["versions"] = [old, v1]
    module = load_module(types_module(two))
    assert is_typeddict(module.Certificate) and is_typeddict(module.CertificateV1beta1Spec)
    assert module.CERTIFICATES.version == "v1" and module.CERTIFICATES_V1BETA1.version == "v1beta1"
    (resource,) = [v for v in vars(module).values() if isinstance(v, crd.CustomResource)]
    assert normalized(resource.definition()) == normalized(two)
