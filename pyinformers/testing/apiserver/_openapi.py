"""The OpenAPI documents of the in-process API server, as much of them as kubectl reads.

A real kube-apiserver serves full schemas at ``/openapi/v2`` and
``/openapi/v3/<group-version>``. ``kubectl`` reads them to decide how to
validate (``--validate=strict`` asks the server to validate, with
``fieldValidation=Strict``, when the group-version's document says its PATCH
operation takes that parameter) and how to build ``apply`` and ``edit``
patches (it falls back to its compiled-in types for built-in kinds when a
schema is missing). The documents here are built from the registry: every
served resource with its operations, the group-version-kind extension and
the query parameters; the object schemas are left empty (``kubectl explain``
has nothing to explain).

Pure functions over the registry; thread-safe.
"""

from __future__ import annotations

import hashlib
import json

from pyinformers.testing.apiserver._registry import Registry, ResourceType

__all__ = ["v3_index", "v3_document", "v2_document"]

_QUERY_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for rt in registry.all():
        key = (rt.group, rt.version)
        if key not in seen:
            seen.append(key)
    return sorted(seen)


def v3_document(registry: Registry, group: str, version: str) -> dict | None:
    """The OpenAPI v3 document of one group-version (None when it is not served)."""
    types = [rt for rt in registry.all() if rt.group == group and rt.version == version]
    if not types:
        return None
    paths: dict = {}
    for rt in sorted(types, key=lambda r: r.plural):
        paths.update(_paths(rt))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "pyinformers.testing"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _operation(rt: ResourceType, action: str, verb: str) -> dict:
    return {
        "operationId": f"{verb}{rt.kind}",
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for name in _QUERY_PARAMETERS
        ],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
        },
    }


def _paths(rt: ResourceType) -> dict:
    prefix = "/" + _gv_path(rt.group, rt.version)
    scope = (
        f"{prefix}/namespaces/{{namespace}}/{rt.plural}"
        if rt.namespaced
        else f"{prefix}/{rt.plural}"
    )
    paths = {
        scope: {
            "get": _operation(rt, "list", "list"),
            "post": _operation(rt, "post", "create"),
            "delete": _operation(rt, "deletecollection", "deleteCollection"),
        },
        f"{scope}/{{name}}": {
            "get": _operation(rt, "get", "read"),
            "put": _operation(rt, "put", "replace"),
            "patch": _operation(rt, "patch", "patch"),
            "delete": _operation(rt, "delete", "delete"),
        },
    }
    if rt.has_status:
        paths[f"{scope}/{{name}}/status"] = {
            "get": _operation(rt, "get", "read"),
            "put": _operation(rt, "put", "replace"),
            "patch": _operation(rt, "patch", "patch"),
        }
    return paths


def v3_index(registry: Registry) -> dict:
    """``/openapi/v3``: where each group-version's document is (with a content hash, as the real one)."""
    paths = {}
    for group, version in _group_versions(registry):
        document = v3_document(registry, group, version)
        digest = (
            hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:128].upper()
        )
        gv = _gv_path(group, version)
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}


def v2_document(registry: Registry) -> dict:
    """``/openapi/v2`` in JSON: the served paths, no definitions."""
    paths: dict = {}
    for group, version in _group_versions(registry):
        document = v3_document(registry, group, version) or {}
        paths.update(document.get("paths", {}))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "pyinformers.testing"},
        "paths": paths,
        "definitions": {},
    }
