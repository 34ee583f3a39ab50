"""CRDs in the embedded server: a malformed one is a 422 with causes, never a 500.

The transcript replay (tests/testing/apiserver/test_transcripts.py) holds the valid cases and
the documented invalid ones to a real server; here hypothesis throws wrong
types at every field of a CRD, over HTTP, and checks that the server keeps
answering like an API server.
"""

from __future__ import annotations

import copy

import orjson
import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyinformers.testing import ApiServer
from pyinformers.testing.apiserver._crd import check_custom_object, validate_crd

VALID = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, prefix + (i,))


PATHS = [p for p in _paths(VALID) if p]


def _replace(doc, path, value):
    """``doc`` with ``value`` at ``path``; TypeError/KeyError/IndexError when the path is no longer there."""
    doc = copy.deepcopy(doc)
    node = doc
    for depth, part in enumerate(path):
        if isinstance(node, dict) != isinstance(part, str):
            raise TypeError(f"{part!r} does not index a {type(node).__name__}")
        if depth == len(path) - 1:
            node[part] = value
        else:
            node = node[part]
    return doc


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PATHS), JSON)
def test_validation_of_any_malformed_crd_returns_causes_and_never_raises(path, value):
    causes = validate_crd(_replace(VALID, path, value))
    assert isinstance(causes, list)
    assert all(
        isinstance(reason, str) and isinstance(field, str) and isinstance(detail, str)
        for reason, field, detail in causes
    )


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_schema_checks_of_any_object_against_any_schema_never_raise(schema, obj):
    if isinstance(obj, dict):
        check_custom_object(schema if isinstance(schema, dict) else None, obj)
        check_custom_object(VALID["spec"]["versions"][0]["schema"]["openAPIV3Schema"], obj)


def test_the_valid_crd_is_valid():
    assert validate_crd(VALID) == []


def test_versions_as_a_mapping_is_a_422_naming_the_field():
    with ApiServer() as server:
        bad = _replace(VALID, ("spec", "versions"), {"v1": {"served": True, "storage": True}})
        resp = _post(server, bad)
    assert resp.status == 422
    causes = orjson.loads(resp.data)["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.versions"]


def _post(server, body):
    return urllib3.PoolManager().request(
        "POST",
        server.url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        body=orjson.dumps(body),
        headers={"Content-Type": "application/json"},
        retries=False,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), JSON), min_size=1, max_size=3))
def test_a_malformed_crd_over_http_is_a_4xx_with_causes_never_a_500(mutations):
    doc = VALID
    for path, value in mutations:
        try:
            doc = _replace(doc, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the path
    with ApiServer() as server:
        resp = _post(server, doc)
        assert resp.status < 500, resp.data
        if resp.status == 422:
            assert orjson.loads(resp.data)["details"]["causes"]
        if (
            resp.status == 201
        ):  # it was served: a custom resource of it must not break the server either
            spec = doc["spec"]
            resource = f"/apis/{spec['group']}/{spec['versions'][0]['name']}/namespaces/default/{spec['names']['plural']}"
            created = urllib3.PoolManager().request(
                "POST",
                server.url + resource,
                body=b'{"metadata": {"name": "w"}, "spec": {"size": 0}}',
                headers={"Content-Type": "application/json"},
                retries=False,
            )
            assert created.status < 500, created.data
