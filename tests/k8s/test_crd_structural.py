"""Custom resources validated as kube-apiserver validates them, held identical on both servers.

Run with ``--k8s-server=both``. Each test installs a CRD of its own (a
unique group, deleted at the end) and writes custom resources through the
official client's ``CustomObjectsApi``, asserting the exact answer: what
is stored (pruned, defaulted), or the 422's causes. The CRD is written
exactly as controller-gen writes one (``metadata: {type: object}`` under the
root properties, descriptions, formats), for a CronJob-like kind whose
``jobTemplate`` is an embedded JobTemplateSpec kept with
``x-kubernetes-preserve-unknown-fields`` where controller-gen would expand
it.
"""

from __future__ import annotations

import copy
import json
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from pyinformers import install_crd
from pyinformers.api import Invalid
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(120)

_META = {"description": "Standard object's metadata.", "type": "object"}
_TYPE_META = {
    "apiVersion": {
        "description": "APIVersion defines the versioned schema of this representation of an object.",
        "type": "string",
    },
    "kind": {
        "description": "Kind is a string value representing the REST resource this object represents.",
        "type": "string",
    },
}


def cronjob_schema() -> dict:
    """The schema controller-gen writes for the kubebuilder tutorial's CronJob, with the job spec kept open."""
    return {
        "description": "CronJob is the Schema for the cronjobs API",
        "type": "object",
        "properties": {
            **copy.deepcopy(_TYPE_META),
            "metadata": {"type": "object"},
            "spec": {
                "description": "CronJobSpec defines the desired state of CronJob",
                "type": "object",
                "required": ["jobTemplate", "schedule"],
                "properties": {
                    "concurrencyPolicy": {
                        "default": "Allow",
                        "enum": ["Allow", "Forbid", "Replace"],
                        "type": "string",
                    },
                    "failedJobsHistoryLimit": {"format": "int32", "minimum": 0, "type": "integer"},
                    "jobTemplate": {
                        "description": "Specifies the job that will be created when executing a CronJob.",
                        "type": "object",
                        "properties": {
                            "metadata": {"type": "object"},
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "backoffLimit": {
                                        "format": "int32",
                                        "type": "integer",
                                        "default": 6,
                                    },
                                    "parallelism": {
                                        "format": "int32",
                                        "type": "integer",
                                        "minimum": 0,
                                    },
                                },
                            },
                        },
                    },
                    "schedule": {"minLength": 0, "maxLength": 64, "type": "string"},
                    "startingDeadlineSeconds": {"format": "int64", "minimum": 0, "type": "integer"},
                    "successfulJobsHistoryLimit": {
                        "format": "int32",
                        "minimum": 0,
                        "type": "integer",
                    },
                    "suspend": {"type": "boolean"},
                    "port": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "x-kubernetes-int-or-string": True,
                    },
                    "owner": {"type": "string", "nullable": True},
                    "note": {"type": "string"},
                    "window": {"type": "string", "nullable": True, "default": "always"},
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "x-kubernetes-preserve-unknown-fields": True,
                    },
                    "params": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "value": {"type": "string"},
                                "kind": {"type": "string", "default": "plain"},
                            },
                        },
                    },
                    "steps": {
                        "type": "array",
                        "maxItems": 10,
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "maxLength": 32},
                                "retries": {"type": "integer", "default": 0},
                            },
                        },
                    },
                },
            },
            "status": {
                "description": "CronJobStatus defines the observed state of CronJob",
                "type": "object",
                "properties": {
                    "active": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "x-kubernetes-map-type": "atomic",
                        },
                        "x-kubernetes-list-type": "atomic",
                    },
                    "lastScheduleTime": {"format": "date-time", "type": "string"},
                },
            },
        },
    }


def crd_for(group: str, schema: dict, *, plural: str = "cronjobs", kind: str = "CronJob") -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.16.4"},
        },
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


class Kind:
    """One installed CRD of a test and the calls on its objects, all through the official client."""

    def __init__(self, k8s: Any, schema: dict) -> None:
        self.k8s = k8s
        self.group = f"s{secrets.token_hex(4)}.example.com"
        self.crd = crd_for(self.group, schema)
        self.api = k8s.api_client()
        self.objects = CustomObjectsApi(self.api)
        self.crds = ApiextensionsV1Api(self.api)

    def install(self) -> None:
        install_crd(self.api, self.crd, timeout=60)

    def replace_schema(self, schema: dict) -> None:
        """Update the CRD's schema (the real server swaps its handlers a moment later: callers wait)."""
        response = self.crds.read_custom_resource_definition(
            self.crd["metadata"]["name"], _preload_content=False
        )
        body = json.loads(response.data)
        body["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
        self.crds.replace_custom_resource_definition(self.crd["metadata"]["name"], body)

    def remove(self) -> None:
        try:
            self.crds.delete_custom_resource_definition(self.crd["metadata"]["name"])
        except ApiException:
            pass

    def body(self, name: str, spec: dict, **extra: Any) -> dict:
        return {
            "apiVersion": f"{self.group}/v1",
            "kind": "CronJob",
            "metadata": {"name": name},
            "spec": spec,
            **extra,
        }

    def create(self, body: dict, **params: Any) -> dict:
        return self.objects.create_namespaced_custom_object(
            self.group, "v1", self.k8s.namespace, "cronjobs", body, **params
        )

    def get(self, name: str) -> dict:
        return self.objects.get_namespaced_custom_object(
            self.group, "v1", self.k8s.namespace, "cronjobs", name
        )

    def replace(self, name: str, body: dict) -> dict:
        return self.objects.replace_namespaced_custom_object(
            self.group, "v1", self.k8s.namespace, "cronjobs", name, body
        )

    def refused(
        self, call: Any, *args: Any, **kwargs: Any
    ) -> tuple[int, str, list[tuple[str, str, str]]]:
        """``(status, message, causes)`` of a call that must fail."""
        with pytest.raises(ApiException) as info:
            call(*args, **kwargs)
        status = json.loads(info.value.body)
        causes = [
            (c.get("reason", ""), c.get("field", ""), c.get("message", ""))
            for c in (status.get("details") or {}).get("causes") or ()
        ]
        return (
            info.value.status,
            status.get("message", ""),
            sorted(causes, key=lambda c: (c[1], c[2])),
        )


@pytest.fixture
def cronjobs(k8s: Any) -> Iterator[Kind]:
    kind = Kind(k8s, cronjob_schema())
    kind.install()
    try:
        yield kind
    finally:
        kind.remove()


def _job(**spec: Any) -> dict:
    return {
        "schedule": "*/1 * * * *",
        "jobTemplate": {
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
        },
        **spec,
    }


# -- the blocker: controller-gen's metadata: {type: object} -------------------------------------------


def test_a_controller_gen_crd_keeps_the_name_and_namespace_of_a_custom_resource(cronjobs):
    created = cronjobs.create(cronjobs.body("nightly", _job()))
    assert created["metadata"]["name"] == "nightly"
    assert created["metadata"]["namespace"] == cronjobs.k8s.namespace
    assert cronjobs.get("nightly")["metadata"]["name"] == "nightly"


def test_a_strict_create_of_a_controller_gen_resource_finds_no_unknown_metadata_fields(cronjobs):
    body = cronjobs.body("strict", _job())
    body["metadata"]["labels"] = {"app": "x"}
    body["metadata"]["annotations"] = {"a": "b"}
    created = cronjobs.create(body, field_validation="Strict")
    assert created["metadata"]["labels"] == {"app": "x"}


def test_install_crd_refuses_a_schema_that_is_not_structural(k8s):
    schema = {
        "type": "object",
        "properties": {
            "spec": {"properties": {"size": {"type": "integer"}}},
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        },
    }
    kind = Kind(k8s, schema)
    try:
        with pytest.raises(Invalid) as refused:
            install_crd(kind.api, kind.crd, timeout=30)
        status, message, causes = kind.refused(
            kind.crds.create_custom_resource_definition, kind.crd
        )
    finally:
        kind.remove()
    assert "must not be empty for specified object fields" in str(refused.value)
    root = "spec.validation.openAPIV3Schema"
    assert status == 422
    assert causes == [
        (
            "FieldValueForbidden",
            f"{root}.properties[metadata]",
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        ),
        (
            "FieldValueRequired",
            f"{root}.properties[spec].type",
            "Required value: must not be empty for specified object fields",
        ),
    ]
    assert message.startswith(
        f'CustomResourceDefinition.apiextensions.k8s.io "cronjobs.{kind.group}" is invalid: '
    )


# -- pruning ---------------------------------------------------------------------------------------


def test_unknown_fields_are_pruned_and_a_strict_write_names_them(cronjobs):
    spec = _job(bogus=1)
    spec["jobTemplate"]["metadata"] = {"labels": {"team": "a"}}
    spec["jobTemplate"]["spec"]["extra"] = {"kept": True}
    created = cronjobs.create(cronjobs.body("pruned", spec, extraTop=1))
    assert "bogus" not in created["spec"]
    assert "extraTop" not in created
    assert (
        created["spec"]["jobTemplate"]["metadata"] == {}
    )  # {type: object} without properties keeps nothing
    assert created["spec"]["jobTemplate"]["spec"]["extra"] == {
        "kept": True
    }  # preserve-unknown-fields
    status, message, _ = cronjobs.refused(
        cronjobs.create, cronjobs.body("pruned2", spec), field_validation="Strict"
    )
    assert status == 400
    assert 'unknown field "spec.bogus"' in message
    assert 'unknown field "spec.jobTemplate.metadata.labels"' in message
    assert "extra" not in message


def test_an_embedded_resource_keeps_its_type_and_object_meta_and_drops_unknown_metadata_fields(
    cronjobs,
):
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"a": "b"}, "bogus": 1},
        "data": {"k": "v"},
    }
    created = cronjobs.create(cronjobs.body("embedded", _job(template=template)))
    assert created["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"a": "b"}},
        "data": {"k": "v"},
    }


def test_an_embedded_resource_needs_an_api_version_and_a_kind(cronjobs):
    status, _, causes = cronjobs.refused(
        cronjobs.create, cronjobs.body("noapi", _job(template={"metadata": {"name": "x"}}))
    )
    assert status == 422
    assert causes == [
        ("FieldValueRequired", "spec.template.apiVersion", "Required value"),
        ("FieldValueRequired", "spec.template.kind", "Required value"),
    ]


def test_an_embedded_resource_with_invalid_labels_is_refused(cronjobs):
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"labels": {"a": "not valid!"}},
    }
    status, _, causes = cronjobs.refused(
        cronjobs.create, cronjobs.body("badlabels", _job(template=template))
    )
    assert status == 422
    assert [(reason, field) for reason, field, _ in causes] == [
        ("FieldValueInvalid", "spec.template.metadata.labels")
    ]


# -- defaults and nulls ----------------------------------------------------------------------------


def test_defaults_are_applied_at_every_depth_on_create(cronjobs):
    created = cronjobs.create(
        cronjobs.body("defaults", _job(params={"a": {"value": "x"}}, steps=[{"name": "one"}]))
    )
    spec = created["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["window"] == "always"
    assert spec["jobTemplate"]["spec"]["backoffLimit"] == 6  # below preserve-unknown-fields
    assert spec["params"] == {"a": {"value": "x", "kind": "plain"}}  # under additionalProperties
    assert spec["steps"] == [{"name": "one", "retries": 0}]  # under items


def test_a_null_is_kept_where_nullable_dropped_where_not_and_defaulted_where_a_default_is(cronjobs):
    created = cronjobs.create(cronjobs.body("nulls", _job(owner=None, note=None, window=None)))
    spec = created["spec"]
    assert "owner" in spec and spec["owner"] is None
    assert "note" not in spec
    assert spec["window"] is None  # nullable: the null stays, the default is for an absent field


def test_a_default_added_to_the_crd_later_shows_when_an_old_object_is_read(cronjobs):
    cronjobs.create(cronjobs.body("old", _job()))
    schema = cronjob_schema()
    schema["properties"]["spec"]["properties"]["suspend"]["default"] = False
    cronjobs.replace_schema(schema)
    eventually(
        lambda: cronjobs.get("old")["spec"].get("suspend") is False,
        30,
        what="the new default on read",
    )


# -- value validation -------------------------------------------------------------------------------


def test_int_or_string_takes_either_and_refuses_anything_else(cronjobs):
    assert cronjobs.create(cronjobs.body("port-int", _job(port=8080)))["spec"]["port"] == 8080
    assert cronjobs.create(cronjobs.body("port-str", _job(port="http")))["spec"]["port"] == "http"
    status, _, causes = cronjobs.refused(
        cronjobs.create, cronjobs.body("port-bool", _job(port=True))
    )
    assert status == 422
    assert (
        causes
        == [  # the type (integer or string), then controller-gen's anyOf and its first branch
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.port" must validate at least one schema (anyOf)',
            ),
            (
                "FieldValueTypeInvalid",
                "spec.port",
                'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
            ),
            (
                "FieldValueTypeInvalid",
                "spec.port",
                'Invalid value: "boolean": spec.port in body must be of type integer: "boolean"',
            ),
        ]
    )


def test_required_enum_and_bounds_are_the_real_servers_causes(cronjobs):
    spec = {"jobTemplate": {}, "concurrencyPolicy": "Sometimes", "failedJobsHistoryLimit": -1}
    status, message, causes = cronjobs.refused(cronjobs.create, cronjobs.body("bad", spec))
    assert status == 422
    assert causes == [
        (
            "FieldValueNotSupported",
            "spec.concurrencyPolicy",
            'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
        ),
        (
            "FieldValueInvalid",
            "spec.failedJobsHistoryLimit",
            "Invalid value: -1: spec.failedJobsHistoryLimit in body should be greater than or equal to 0",
        ),
        ("FieldValueRequired", "spec.schedule", "Required value"),
    ]
    assert message.startswith(f'CronJob.{cronjobs.group} "bad" is invalid: ')


def test_root_metadata_is_validated_only_by_its_name_constraints(k8s):
    schema = cronjob_schema()
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 8}},
    }
    kind = Kind(k8s, schema)
    kind.install()
    try:
        assert kind.create(kind.body("short", _job()))["metadata"]["name"] == "short"
        status, _, causes = kind.refused(kind.create, kind.body("much-too-long", _job()))
    finally:
        kind.remove()
    assert status == 422
    assert causes == [
        ("FieldValueTooLong", "metadata.name", "Too long: may not be more than 8 bytes")
    ]


# -- CEL rules ----------------------------------------------------------------------------------------


def _rules_schema(rules: list, spec_props: dict | None = None) -> dict:
    schema = cronjob_schema()
    spec = schema["properties"]["spec"]
    spec["properties"].update(spec_props or {})
    spec["x-kubernetes-validations"] = rules
    return schema


@pytest.fixture
def ruled(k8s: Any, request: Any) -> Iterator[Kind]:
    rules, spec_props = request.param
    kind = Kind(k8s, _rules_schema(rules, spec_props))
    kind.install()
    try:
        yield kind
    finally:
        kind.remove()


LIMITS = {
    "limit": {"type": "integer"},
    "count": {"type": "integer"},
    "memory": {"type": "string"},
    "endpoint": {"type": "string"},
}


@pytest.mark.parametrize(
    "ruled",
    [
        (
            [
                {
                    "rule": "self.count <= self.limit",
                    "message": "count must not exceed limit",
                    "fieldPath": ".count",
                },
                {
                    "rule": "!has(self.memory) || quantity(self.memory).isLessThan(quantity('1Gi'))",
                    "messageExpression": "'memory ' + self.memory + ' is not below 1Gi'",
                    "reason": "FieldValueForbidden",
                },
                {
                    "rule": "!has(self.endpoint) || (isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https')",
                    "message": "endpoint must be an https URL",
                },
                {"rule": "self.schedule.matches('^[*/0-9 ,-]+$')"},
            ],
            LIMITS,
        )
    ],
    indirect=True,
)
def test_cel_rules_refuse_a_write_with_the_real_servers_causes(ruled):
    spec = _job(count=3, limit=5, memory="512Mi", endpoint="https://example.com")
    assert ruled.create(ruled.body("ok", spec))["spec"]["count"] == 3
    bad = _job(count=9, limit=5, memory="2Gi", endpoint="http://example.com", schedule="daily")
    status, _, causes = ruled.refused(ruled.create, ruled.body("bad", bad))
    assert status == 422
    assert causes == [
        ("FieldValueForbidden", "spec", "Forbidden: memory 2Gi is not below 1Gi"),
        ("FieldValueInvalid", "spec", "Invalid value: endpoint must be an https URL"),
        (
            "FieldValueInvalid",
            "spec",
            "Invalid value: failed rule: self.schedule.matches('^[*/0-9 ,-]+$')",
        ),
        ("FieldValueInvalid", "spec.count", "Invalid value: count must not exceed limit"),
    ]


@pytest.mark.parametrize(
    "ruled",
    [([{"rule": "self.schedule == oldSelf.schedule", "message": "schedule is immutable"}], {})],
    indirect=True,
)
def test_a_transition_rule_runs_on_update_only(ruled):
    created = ruled.create(ruled.body("t", _job()))
    changed = copy.deepcopy(created)
    changed["spec"]["suspend"] = True
    assert ruled.replace("t", changed)["spec"]["suspend"] is True
    moved = ruled.get("t")
    moved["spec"]["schedule"] = "0 * * * *"
    status, _, causes = ruled.refused(ruled.replace, "t", moved)
    assert status == 422
    assert causes == [("FieldValueInvalid", "spec", "Invalid value: schedule is immutable")]


@pytest.mark.parametrize(
    "ruled",
    [
        (
            [
                {
                    "rule": "self.steps.all(s, s.name.size() > 0) && self.steps.exists(s, s.retries >= 0)",
                    "message": "named steps",
                },
                {
                    "rule": "self.steps.map(s, s.name).filter(n, n.startsWith('x')).size() == 0",
                    "message": "no x steps",
                },
                {
                    "rule": "size(self.steps) <= 2 && self.steps.map(s, s.retries).isSorted() && self.steps.map(s, s.retries).sum() < 10",
                    "message": "list library",
                },
                {
                    "rule": "self.schedule.find('[0-9]+') == '' || self.schedule.findAll('[0-9]+').size() >= 1",
                    "message": "regex library",
                },
                {
                    "rule": "self.schedule.lowerAscii().split(' ').size() == 5",
                    "message": "strings library",
                },
            ],
            {},
        )
    ],
    indirect=True,
)
def test_cel_list_string_and_regex_functions_evaluate_as_on_the_real_server(ruled):
    assert ruled.create(
        ruled.body("ok", _job(steps=[{"name": "a", "retries": 1}, {"name": "b", "retries": 2}]))
    )
    status, _, causes = ruled.refused(
        ruled.create,
        ruled.body(
            "bad",
            _job(steps=[{"name": "xa", "retries": 5}, {"name": "b", "retries": 1}, {"name": "c"}]),
        ),
    )
    assert status == 422
    assert causes == [
        ("FieldValueInvalid", "spec", "Invalid value: list library"),
        ("FieldValueInvalid", "spec", "Invalid value: no x steps"),
    ]


def test_a_crd_with_a_cel_syntax_error_is_refused(k8s):
    kind = Kind(k8s, _rules_schema([{"rule": "self.schedule ==", "message": "m"}]))
    try:
        status, _, causes = kind.refused(kind.crds.create_custom_resource_definition, kind.crd)
    finally:
        kind.remove()
    assert status == 422
    assert [(reason, field) for reason, field, _ in causes] == [
        (
            "FieldValueInvalid",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
        )
    ]
    assert "compilation failed: ERROR: <input>:1:17: Syntax error:" in causes[0][2]


LIBRARY_FIELDS = {  # bounded, or the real server refuses the rules' estimated cost
    **{
        name: {"type": "string", "maxLength": 64}
        for name in ("q", "big", "u", "ip", "net", "text", "opt")
    },
    "nums": {"type": "array", "maxItems": 8, "items": {"type": "integer"}},
    "words": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 8}},
    "ratio": {"type": "number"},
}
# Each rule holds on LIBRARY_VALUES; its message names it, so a 422 says which one an implementation got wrong.
LIBRARY_RULES = [
    "quantity(self.q).isLessThan(quantity('2')) && quantity(self.q).isGreaterThan(quantity('1'))",
    "quantity(self.q).compareTo(quantity('1.5')) == 0",
    "quantity(self.big).asInteger() == 2147483648",
    # 1500m + 500m is 2000m, kept at the scale of milli: no integer to Kubernetes
    "!quantity(self.q).add(quantity('500m')).isInteger() && quantity('2').add(1).isInteger() && !quantity(self.q).isInteger()",
    "quantity(self.q).asApproximateFloat() == 1.5",
    "quantity(self.q).sub(2).isLessThan(quantity('0')) && quantity(self.q).add(1).compareTo(quantity('2500m')) == 0",
    "isQuantity(self.q) && !isQuantity('1.5.5')",
    "url(self.u).getScheme() == 'https' && url(self.u).getHost() == 'example.com:8443'",
    "url(self.u).getHostname() == 'example.com' && url(self.u).getPort() == '8443'",
    "url(self.u).getEscapedPath() == '/a/b' && url(self.u).getQuery()['x'] == ['1', '2']",
    "isURL(self.u) && !isURL('not a url')",
    "ip(self.ip).family() == 4 && isIP(self.ip) && !isIP('300.1.1.1')",
    "cidr(self.net).containsIP(self.ip) && cidr(self.net).containsIP(ip(self.ip)) && cidr(self.net).prefixLength() == 8",
    "cidr(self.net).containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR(self.net)",
    "ip('127.0.0.1').isLoopback() && isCIDR(self.net) && !isCIDR('10.0.0.0/33')",
    "self.nums.isSorted() && self.nums.sum() == 6 && self.nums.min() == 1 && self.nums.max() == 3",
    "!self.words.isSorted()",
    "self.text.find('[0-9]+') == '123' && self.text.findAll('[0-9]+') == ['123', '45'] && self.text.findAll('[0-9]+', 1) == ['123']",
    "sets.contains(self.nums, [1, 2]) && sets.intersects(self.nums, [3, 4]) && sets.equivalent(self.nums, [3, 2, 1])",
    "self.text.split(' ').size() == 4 && self.text.upperAscii().startsWith('ABC') && self.text.indexOf('123') == 4",
    "self.text.substring(4, 7) == '123' && self.text.replace(' ', '-') == 'abc-123-def-45' && '  x '.trim() == 'x'",
    "self.text.lastIndexOf(' ') == 11 && self.text.charAt(0) == 'a'",
    "self.nums.exists_one(n, n == 2) && self.nums.map(n, n * 2) == [2, 4, 6] && self.nums.filter(n, n > 1) == [2, 3]",
    "self.nums.all(n, n > 0) && self.nums.exists(n, n == 3) && size(self.nums) == 3 && self.nums.size() == 3",
    "has(self.q) && !has(self.opt)",
    "self.?opt.orValue('none') == 'none'",
    "duration('1h') > duration('30m') && timestamp('2024-01-01T00:00:00Z') < timestamp('2025-01-01T00:00:00Z')",
    "self.ratio == 2.0 && self.ratio + 0.5 == 2.5",
    "self.text.matches('^abc') && !self.text.matches('^x')",
    "'abc' in ['abc'] && self.nums[0] == 1 && 2 in self.nums",
]
LIBRARY_VALUES = {
    "q": "1500m",
    "big": "2Gi",
    "u": "https://user@example.com:8443/a/b?x=1&x=2",
    "ip": "10.1.2.3",
    "net": "10.0.0.0/8",
    "nums": [1, 2, 3],
    "words": ["b", "a"],
    "text": "abc 123 def 45",
    "ratio": 2,
}


@pytest.mark.parametrize(
    "ruled",
    [([{"rule": r, "message": f"rule {i}"} for i, r in enumerate(LIBRARY_RULES)], LIBRARY_FIELDS)],
    indirect=True,
)
def test_the_kubernetes_cel_libraries_evaluate_as_on_the_real_server(ruled):
    created = ruled.create(ruled.body("library", _job(**LIBRARY_VALUES)))
    assert created["spec"]["q"] == "1500m"


def test_a_rule_at_the_root_sees_the_name_and_its_cause_has_no_field(k8s):
    schema = cronjob_schema()
    schema["x-kubernetes-validations"] = [
        {"rule": "self.metadata.name.startsWith('cj-')", "message": "names start with cj-"}
    ]
    kind = Kind(k8s, schema)
    kind.install()
    try:
        assert kind.create(kind.body("cj-ok", _job()))["metadata"]["name"] == "cj-ok"
        status, message, causes = kind.refused(kind.create, kind.body("other", _job()))
    finally:
        kind.remove()
    assert status == 422
    assert causes == [("FieldValueInvalid", "<nil>", "Invalid value: names start with cj-")]
    assert (
        message
        == f'CronJob.{kind.group} "other" is invalid: <nil>: Invalid value: names start with cj-'
    )


@pytest.mark.parametrize(
    "ruled",
    [
        (
            [
                {
                    "rule": "oldSelf.hasValue() || !has(self.suspend) || !self.suspend",
                    "message": "not created suspended",
                    "optionalOldSelf": True,
                }
            ],
            {},
        )
    ],
    indirect=True,
)
def test_an_optional_old_self_rule_runs_on_create_too(ruled):
    status, _, causes = ruled.refused(ruled.create, ruled.body("susp", _job(suspend=True)))
    assert (status, causes) == (
        422,
        [("FieldValueInvalid", "spec", "Invalid value: not created suspended")],
    )
    created = ruled.create(ruled.body("susp", _job(suspend=False)))
    created["spec"]["suspend"] = True
    assert ruled.replace("susp", created)["spec"]["suspend"] is True


def test_a_rule_added_later_lets_an_update_leave_a_failing_value_alone(k8s):
    box = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    kind = Kind(k8s, _rules_schema([], dict(LIMITS, box=box)))
    kind.install()
    try:
        kind.create(kind.body("ratchet", _job(count=9, limit=5, box={"a": 3, "b": 1})))
        ruled_box = dict(
            box,
            **{"x-kubernetes-validations": [{"rule": "self.a <= self.b", "message": "a above b"}]},
        )
        spec_rules = [
            {
                "rule": "self.count <= self.limit",
                "message": "count above limit",
                "fieldPath": ".count",
            }
        ]
        kind.replace_schema(_rules_schema(spec_rules, dict(LIMITS, box=ruled_box)))

        def changed(**spec: Any) -> dict:
            body = kind.get("ratchet")
            body["spec"].update(spec)
            return body

        def refused_now() -> bool:
            try:
                kind.replace("ratchet", changed(box={"a": 4, "b": 1}))
                return False
            except ApiException as exc:
                return exc.status == 422

        eventually(refused_now, 30, what="the new rules enforced")
        labelled = kind.get("ratchet")
        labelled["metadata"]["labels"] = {"touched": "yes"}  # box and spec stay as they were
        status, _, causes = kind.refused(kind.replace, "ratchet", labelled)
    finally:
        kind.remove()
    # box is unchanged: its rule's error is ratcheted; spec is unchanged too, but holds
    # preserve-unknown-fields (jobTemplate.spec) and is never taken as unchanged
    assert (status, causes) == (
        422,
        [("FieldValueInvalid", "spec.count", "Invalid value: count above limit")],
    )


SETS = {
    "tags": {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
        "maxItems": 3,
    },
    "ports": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        },
    },
    "env": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string"}},
    "when": {"type": "string", "format": "date-time"},
}


@pytest.mark.parametrize("ruled", [([], SETS)], indirect=True)
def test_list_types_counts_and_formats_are_the_real_servers_causes(ruled):
    spec = _job(
        tags=["a", "b"],
        ports=[{"name": "http", "port": 80}],
        env={"A": "1"},
        when="2024-01-01T00:00:00Z",
    )
    assert ruled.create(ruled.body("ok", spec))["spec"]["tags"] == ["a", "b"]
    bad = _job(
        tags=["a", "b", "a", "c"],
        ports=[{"name": "http", "port": 80}, {"name": "http", "port": 81}],
        env={"A": "1", "B": "2", "C": "3"},
        when="yesterday",
    )
    status, _, causes = ruled.refused(ruled.create, ruled.body("bad", bad))
    assert status == 422
    assert causes == [
        ("FieldValueTooMany", "spec.env", "Too many: 3: must have at most 2 items"),
        ("FieldValueDuplicate", "spec.ports[1]", 'Duplicate value: {"name":"http"}'),
        ("FieldValueTooMany", "spec.tags", "Too many: 4: must have at most 3 items"),
        ("FieldValueDuplicate", "spec.tags[2]", 'Duplicate value: "a"'),
        (
            "FieldValueTypeInvalid",
            "spec.when",
            'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
        ),
    ]


def test_a_schema_tightened_later_lets_an_update_leave_a_value_alone(cronjobs):
    cronjobs.create(cronjobs.body("tight", _job(note="a long note")))
    schema = cronjob_schema()
    schema["properties"]["spec"]["properties"]["note"]["maxLength"] = 4
    cronjobs.replace_schema(schema)

    def refused_now() -> bool:
        body = cronjobs.get("tight")
        body["spec"]["note"] = "another long note"
        try:
            cronjobs.replace("tight", body)
            return False
        except ApiException as exc:
            return exc.status == 422

    eventually(refused_now, 30, what="the new maxLength enforced")
    body = cronjobs.get("tight")
    body["spec"]["suspend"] = True  # note stays as it was: ratcheted
    assert cronjobs.replace("tight", body)["spec"]["note"] == "a long note"


# -- the whole JobTemplateSpec, as controller-gen expands it ---------------------------------------


@pytest.fixture
def expanded(k8s: Any) -> Iterator[Kind]:
    """The CronJob CRD generated from tests/crd/cronjob_types.py: the JobTemplateSpec's real schema, expanded."""
    from tests.crd.cronjob_types import CRONJOB_CRD

    definition = copy.deepcopy(CRONJOB_CRD.definition())
    kind = Kind(k8s, {})
    kind.crd = definition
    definition["spec"]["group"] = kind.group
    definition["metadata"]["name"] = f"{definition['spec']['names']['plural']}.{kind.group}"
    kind.install()
    try:
        yield kind
    finally:
        kind.remove()


def _pod_template(**container: Any) -> dict:
    base = {
        "name": "main",
        "image": "busybox",
        "args": ["date"],
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"limits": {"cpu": "500m", "memory": 128974848}, "requests": {"cpu": 1}},
        "env": [{"name": "A", "value": "1"}],
    }
    return {
        "metadata": {"labels": {"app": "cron"}},
        "spec": {"restartPolicy": "OnFailure", "containers": [{**base, **container}]},
    }


def test_a_full_job_template_is_kept_defaulted_and_pruned_as_on_the_real_server(expanded):
    spec = {
        "schedule": "*/1 * * * *",
        "jobTemplate": {
            "metadata": {"labels": {"tier": "batch"}},
            "spec": {"template": _pod_template(bogus=1)},
        },
    }
    created = expanded.create(expanded.body("full", spec))
    job = created["spec"]["jobTemplate"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert "bogus" not in container
    assert container["resources"] == {
        "limits": {"cpu": "500m", "memory": 128974848},
        "requests": {"cpu": 1},
    }
    assert container["ports"] == [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
    assert job["metadata"] == {"labels": {"tier": "batch"}}
    assert created["spec"]["concurrencyPolicy"] == "Allow"


def test_a_bad_job_template_is_refused_at_create(expanded):
    template = _pod_template(name=None, ports=[{"containerPort": "http"}])
    spec = {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": template}}}
    status, _, causes = expanded.refused(expanded.create, expanded.body("bad", spec))
    assert status == 422
    prefix = "spec.jobTemplate.spec.template.spec.containers[0]"
    assert causes == [
        ("FieldValueRequired", f"{prefix}.name", "Required value"),
        (
            "FieldValueTypeInvalid",
            f"{prefix}.ports[0].containerPort",
            f'Invalid value: "string": {prefix}.ports[0].containerPort in body must be of type integer: "string"',
        ),
    ]


def test_a_crd_whose_defaults_do_not_validate_is_refused(k8s):
    schema = cronjob_schema()
    props = schema["properties"]["spec"]["properties"]
    props["suspend"]["default"] = "yes"
    props["failedJobsHistoryLimit"]["default"] = -1
    kind = Kind(k8s, schema)
    try:
        status, _, causes = kind.refused(kind.crds.create_custom_resource_definition, kind.crd)
    finally:
        kind.remove()
    root = "spec.validation.openAPIV3Schema.properties[spec].properties"
    assert status == 422
    assert causes == [
        (
            "FieldValueInvalid",
            f"{root}[failedJobsHistoryLimit].default",
            "Invalid value: -1:  in body should be greater than or equal to 0",
        ),
        (
            "FieldValueTypeInvalid",
            f"{root}[suspend].default",
            'Invalid value: "string":  in body must be of type boolean: "string"',
        ),
    ]


NOT_CHECKED = (
    "FieldValueInvalid",
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)


@pytest.mark.parametrize(
    "ruled",
    [([{"rule": "self.count <= self.limit", "message": "count above limit"}], LIMITS)],
    indirect=True,
)
def test_rules_are_not_evaluated_on_an_object_the_schema_refuses_and_the_answer_says_so(ruled):
    status, _, causes = ruled.refused(ruled.create, ruled.body("bad", _job(count="many", limit=5)))
    assert status == 422
    assert causes == [
        NOT_CHECKED,
        (
            "FieldValueTypeInvalid",
            "spec.count",
            'Invalid value: "string": spec.count in body must be of type integer: "string"',
        ),
    ]


def test_a_status_write_is_validated_relative_to_the_status(k8s):
    schema = cronjob_schema()
    schema["properties"]["status"]["x-kubernetes-validations"] = [
        {"rule": "!has(self.active) || size(self.active) <= 1", "message": "one active at most"}
    ]
    schema["properties"]["status"]["properties"]["active"]["maxItems"] = 5
    kind = Kind(k8s, schema)
    kind.install()
    try:
        created = kind.create(kind.body("st", _job()))

        def write_status(status: dict) -> dict:
            body = dict(created, status=status)
            return kind.objects.replace_namespaced_custom_object_status(
                kind.group, "v1", k8s.namespace, "cronjobs", "st", body
            )

        wrong_type = kind.refused(
            write_status, {"active": [{"name": "a"}], "lastScheduleTime": "notatime"}
        )
        too_many = kind.refused(write_status, {"active": [{"name": "a"}, {"name": "b"}]})
        assert write_status({"active": [{"name": "a"}]})["status"] == {"active": [{"name": "a"}]}
    finally:
        kind.remove()
    assert wrong_type[0] == 422
    assert wrong_type[2] == [
        NOT_CHECKED,
        (
            "FieldValueTypeInvalid",
            "status.lastScheduleTime",
            'Invalid value: "notatime": lastScheduleTime in body must be of type date-time: "notatime"',
        ),
    ]
    assert too_many[:1] == (422,)
    assert too_many[2] == [("FieldValueInvalid", "status", "Invalid value: one active at most")]


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_creates_a_resource_of_a_controller_gen_crd_and_names_unknown_fields(
    cronjobs, tmp_path
):
    kubeconfig = cronjobs.k8s.write_kubeconfig(tmp_path / "kubeconfig")

    def kubectl_create(body: dict) -> subprocess.CompletedProcess:
        manifest = tmp_path / "cronjob.json"
        manifest.write_text(json.dumps(body))
        return subprocess.run(
            [str(KUBECTL), "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "cache"), "create", "-f", str(manifest)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    done = kubectl_create(cronjobs.body("nightly", _job()))
    assert (done.returncode, done.stdout.strip()) == (
        0,
        f"cronjob.{cronjobs.group}/nightly created",
    ), done.stderr
    done = kubectl_create(cronjobs.body("typo", _job(schedul="daily")))
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        'CronJob in version "v1" cannot be handled as a CronJob: strict decoding error: unknown field "spec.schedul"'
    ), done.stderr


def test_a_rule_naming_a_field_the_schema_lacks_is_refused_with_the_real_servers_error(k8s):
    rules = [{"rule": "self.count <= self.limt"}, {"rule": "has(self.nope) || oldSelf.zzz == 1"}]
    kind = Kind(k8s, _rules_schema(rules, LIMITS))
    try:
        status, _, causes = kind.refused(kind.crds.create_custom_resource_definition, kind.crd)
    finally:
        kind.remove()
    assert status == 422
    details = [message.split(": compilation failed: ", 1)[1] for _, _, message in causes]
    assert details == [
        "ERROR: <input>:1:19: undefined field 'limt'\n | self.count <= self.limt\n | ..................^",
        "ERROR: <input>:1:4: undefined field 'nope'\n | has(self.nope) || oldSelf.zzz == 1\n | ...^\n"
        "ERROR: <input>:1:26: undefined field 'zzz'\n | has(self.nope) || oldSelf.zzz == 1\n | .........................^",
    ]
