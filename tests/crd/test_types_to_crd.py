"""Python types become CRD schemas: markers, requiredness, descriptions, and one-line errors for bad input."""

import dataclasses
from typing import Annotated, Any, Literal

import pytest
from typing_extensions import NotRequired, TypedDict

from pyinformers import crd


class Child(TypedDict):
    """A child object."""

    name: str


class Everything(TypedDict):
    low: Annotated[int, crd.Minimum(1), crd.Maximum(10, exclusive=True)]
    ratio: NotRequired[Annotated[float, crd.Minimum(0, exclusive=True), crd.MultipleOf(0.5)]]
    name: Annotated[str, crd.MinLength(1), crd.MaxLength(63), crd.Pattern("^[a-z]+$")]
    when: NotRequired[crd.Time]
    mode: NotRequired[Annotated[Literal["Allow", "Forbid"], crd.Default("Allow")]]
    tags: NotRequired[Annotated[list[str], crd.MinItems(1), crd.MaxItems(5), crd.ListType("set")]]
    ports: NotRequired[Annotated[list[Child], crd.ListType("map"), crd.ListMapKeys("name")]]
    labels: NotRequired[Annotated[dict[str, str], crd.MapType("granular"), crd.MaxProperties(3)]]
    raw: NotRequired[Annotated[dict[str, Any], crd.PreserveUnknownFields()]]
    anything: NotRequired[Any]
    port: NotRequired[crd.IntOrString]
    cpu: NotRequired[crd.Quantity]
    maybe: NotRequired[str | None]
    child: NotRequired[
        Annotated[Child, crd.Rule("self.name != 'x'", message="not x", field_path=".name")]
    ]
    template: NotRequired[Annotated[dict[str, Any], crd.EmbeddedResource()]]
    flag: NotRequired[bool]


def test_each_marker_becomes_its_openapi_keyword() -> None:
    props = crd.object_schema(Everything)["properties"]
    assert props["low"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "exclusiveMaximum": True,
    }
    assert props["ratio"] == {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "multipleOf": 0.5,
    }
    assert props["name"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 63,
        "pattern": "^[a-z]+$",
    }
    assert props["when"] == {"type": "string", "format": "date-time"}
    assert props["mode"] == {"type": "string", "enum": ["Allow", "Forbid"], "default": "Allow"}
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "minItems": 1,
        "maxItems": 5,
        "x-kubernetes-list-type": "set",
    }
    assert props["ports"]["x-kubernetes-list-map-keys"] == ["name"]
    assert props["ports"]["items"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    assert props["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "x-kubernetes-map-type": "granular",
        "maxProperties": 3,
    }
    assert props["raw"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["port"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert props["cpu"]["x-kubernetes-int-or-string"] is True and props["cpu"][
        "pattern"
    ].startswith("^")
    assert props["maybe"] == {"type": "string", "nullable": True}
    assert props["child"]["x-kubernetes-validations"] == [
        {"rule": "self.name != 'x'", "message": "not x", "fieldPath": ".name"}
    ]
    assert props["child"]["description"] == "A child object."
    assert props["template"]["x-kubernetes-embedded-resource"] is True
    assert props["flag"] == {"type": "boolean"}


def test_keys_not_marked_not_required_are_required_in_field_order() -> None:
    assert crd.object_schema(Everything)["required"] == ["low", "name"]


class Documented(TypedDict):
    """The spec."""

    a: str
    """Field a,
    on two lines."""
    #: Field b.
    b: NotRequired[int]
    c: NotRequired[Annotated[int, crd.Description("Field c.")]]


def test_descriptions_come_from_docstrings_comments_and_markers() -> None:
    schema = crd.object_schema(Documented, root=True)
    assert schema["description"] == "The spec."
    assert schema["properties"]["a"]["description"] == "Field a,\non two lines."
    assert schema["properties"]["b"]["description"] == "Field b."
    assert schema["properties"]["c"]["description"] == "Field c."


class Root(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: Child


def test_the_root_leaves_api_version_kind_and_metadata_to_the_server() -> None:
    assert crd.object_schema(Root, root=True) == {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "description": "A child object.",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
        "required": ["spec"],
    }


@dataclasses.dataclass
class DataSpec:
    image: str
    replicas: int = 1
    note: str | None = None


def test_a_dataclass_works_too_its_defaults_becoming_schema_defaults() -> None:
    assert crd.object_schema(DataSpec) == {
        "type": "object",
        "properties": {
            "image": {"type": "string"},
            "replicas": {"type": "integer", "default": 1},
            "note": {"type": "string", "nullable": True},
        },
        "required": ["image"],
    }


class BadAnnotation(TypedDict):
    size: Annotated[int, "big"]


class BadMarker(TypedDict):
    size: Annotated[int, crd.MinLength(1)]


class MixedLiteral(TypedDict):
    mode: Literal["a", 1]


class BadUnion(TypedDict):
    value: int | float


class BadDefault(TypedDict):
    count: Annotated[int, crd.Default("three")]


class BadEnumDefault(TypedDict):
    mode: Annotated[Literal["a", "b"], crd.Default("c")]


class CycleA(TypedDict):
    b: "CycleB"


class CycleB(TypedDict):
    a: NotRequired[CycleA]


class Unresolved(TypedDict):
    thing: "NoSuchType"  # type: ignore[name-defined]  # noqa: F821


class BadKey(TypedDict):
    m: dict[int, str]


class SetField(TypedDict):
    s: set[str]


@pytest.mark.parametrize(
    "cls, message",
    [
        (BadAnnotation, "BadAnnotation.size: unsupported annotation 'big'"),
        (BadMarker, "BadMarker.size: marker MinLength does not apply to an integer (only string)"),
        (MixedLiteral, "MixedLiteral.mode: Literal mixes types (integer, string): 'a', 1"),
        (BadUnion, "BadUnion.value: Union[int | float] is not a structural schema"),
        (BadDefault, "BadDefault.count: marker Default: 'three' is not an integer"),
        (BadEnumDefault, "BadEnumDefault.mode: marker Default: 'c' is not one of ['a', 'b']"),
        (CycleA, "CycleA: cycle in the types (CycleA -> CycleB -> CycleA)"),
        (
            Unresolved,
            "Unresolved: cannot resolve its annotations: name 'NoSuchType' is not defined",
        ),
        (BadKey, "BadKey.m: map keys must be str, not int"),
        (SetField, "SetField.s: unsupported type set"),
    ],
)
def test_bad_types_fail_with_one_line_naming_type_field_and_marker(cls: Any, message: str) -> None:
    with pytest.raises(crd.SchemaError) as caught:
        crd.object_schema(cls)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(message) or message in text, text


class Kind(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: Annotated[Child, crd.Rule("self.name.size() > 0")]
    status: NotRequired[dict[str, int]]


def test_a_custom_resource_builds_names_versions_columns_and_subresources() -> None:
    resource = crd.CustomResource(
        group="example.com",
        kind="Policy",
        short_names=["pol"],
        categories=["all"],
        scope="Cluster",
        versions=[
            crd.Version(
                "v1beta1", Kind, served=True, deprecated=True, deprecation_warning="use v1"
            ),
            crd.Version(
                "v1",
                Kind,
                storage=True,
                scale=crd.Scale(".spec.name", ".status.replicas"),
                printer_columns=[
                    crd.PrinterColumn("Name", ".spec.name"),
                    crd.PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
                ],
                rules=[crd.Rule("self.metadata.name.size() < 30")],
            ),
        ],
    )
    definition = resource.definition()
    assert definition["metadata"]["name"] == "policies.example.com"
    assert definition["spec"]["names"] == {
        "kind": "Policy",
        "listKind": "PolicyList",
        "plural": "policies",
        "singular": "policy",
        "shortNames": ["pol"],
        "categories": ["all"],
    }
    assert definition["spec"]["scope"] == "Cluster"
    old, new = definition["spec"]["versions"]
    assert (old["served"], old["storage"], old["deprecated"], old["deprecationWarning"]) == (
        True,
        False,
        True,
        "use v1",
    )
    assert new["additionalPrinterColumns"] == [
        {"name": "Name", "type": "string", "jsonPath": ".spec.name"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    assert new["subresources"] == {
        "status": {},
        "scale": {"specReplicasPath": ".spec.name", "statusReplicasPath": ".status.replicas"},
    }
    assert new["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] == [
        {"rule": "self.metadata.name.size() < 30"}
    ]
    resource_v1 = resource.resource()
    assert (resource_v1.group, resource_v1.version, resource_v1.plural, resource_v1.namespaced) == (
        "example.com",
        "v1",
        "policies",
        False,
    )


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: crd.CustomResource(
                group="example.com",
                kind="K",
                versions=[crd.Version("v1", Kind), crd.Version("v2", Kind)],
            ),
            "exactly one version must be the storage version, got none",
        ),
        (
            lambda: crd.CustomResource(
                group="example", kind="K", versions=[crd.Version("v1", Kind)]
            ),
            "group must be a DNS domain with a dot",
        ),
        (
            lambda: crd.CustomResource(
                group="example.com", kind="K", versions=[crd.Version("1.0", Kind)]
            ),
            "version '1.0' is not a Kubernetes version",
        ),
        (
            lambda: crd.CustomResource(
                group="example.com",
                kind="K",
                versions=[
                    crd.Version("v1", Kind, printer_columns=[crd.PrinterColumn("X", ".spec.nope")])
                ],
            ).definition(),
            "PrinterColumn 'X': the types have no field '.spec.nope'",
        ),
        (
            lambda: crd.CustomResource(
                group="example.com", kind="K", versions=[crd.Version("v1", Child, status=True)]
            ).definition(),
            "the status subresource needs a 'status' field in Child",
        ),
    ],
)
def test_a_bad_custom_resource_fails_with_one_line(build: Any, message: str) -> None:
    with pytest.raises(crd.SchemaError) as caught:
        build()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_plurals_follow_english_spelling() -> None:
    assert [crd.plural_of(k) for k in ("Foo", "Policy", "Ingress", "Gateway", "Box")] == [
        "foos",
        "policies",
        "ingresses",
        "gateways",
        "boxes",
    ]
