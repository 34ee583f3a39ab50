"""The non-resource paths of the embedded API server: discovery, OpenAPI, version and health.

Owns the answers to ``GET`` on every path that names no resource:
``/api`` and ``/apis`` (legacy and, when the client asks for it, aggregated
discovery), ``/api/v1`` and ``/apis/{group}[/{version}]``,
``/openapi/v2``, ``/openapi/v3[/...]``, ``/version``, ``/healthz``,
``/readyz`` and ``/livez``. Each function returns the document (a
:class:`~._http_messages.Text` where the Content-Type is not plain JSON or
plain text), None when the path is not one of these, or raises the real
server's 404 (JSON, or the plain-text :class:`~._http_routing.PageNotFound`).

Thread-safety: functions of the registry's current state (it takes its own
lock); nothing here is mutable.
"""

from __future__ import annotations

from typing import Any

import orjson

from pyinformers.testing.apiserver._http_messages import Text
from pyinformers.testing.apiserver._http_routing import PageNotFound
from pyinformers.testing.apiserver._openapi import v2_document, v3_document, v3_index
from pyinformers.testing.apiserver._registry import Registry
from pyinformers.testing.apiserver._status import not_found

__all__ = ["aggregated", "non_resource"]

_AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def aggregated(registry: Registry, path: str, method: str, accept: str) -> Any | None:
    """``/api`` and ``/apis`` as aggregated discovery when the client asks for it (as kubectl does first)."""
    path = path.rstrip("/") or "/"
    if method != "GET" or path not in ("/api", "/apis") or "as=APIGroupDiscoveryList" not in accept:
        return None
    for item in accept.split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in item.split(";")[1:])
        }
        if (
            params.get("as") == "APIGroupDiscoveryList"
            and params.get("g") == "apidiscovery.k8s.io"
            and params.get("v") == "v2"
        ):
            document = registry.aggregated_discovery(core=path == "/api")
            return Text(orjson.dumps(document).decode(), _AGGREGATED_DISCOVERY)
    return None


def non_resource(registry: Registry, version_info: dict, path: str, method: str) -> Any | None:
    """The answer to a non-resource ``GET`` (``version_info`` for ``/version``); None for other paths."""
    path = path.rstrip("/") or "/"
    if method != "GET":
        return None
    if path == "/version":
        return version_info
    if path in ("/healthz", "/readyz", "/livez"):
        return "ok"
    if path == "/api":
        return registry.core_versions()
    if path == "/apis":
        return registry.api_group_list()
    if path == "/openapi/v2":
        return v2_document(registry)
    if path == "/openapi/v3":
        # The real server sends this JSON index as text/plain.
        return Text(orjson.dumps(v3_index(registry)).decode(), "text/plain; charset=utf-8")
    if path.startswith("/openapi/v3/"):
        gv = path[len("/openapi/v3/") :].split("/")
        if len(gv) == 2 and gv[0] == "api":
            document = v3_document(registry, "", gv[1])
        elif len(gv) == 3 and gv[0] == "apis":
            document = v3_document(registry, gv[1], gv[2])
        else:
            document = None
        if document is None:
            raise PageNotFound()
        return document
    parts = path.strip("/").split("/")
    if parts == ["api", "v1"]:
        return registry.resource_list("", "v1")
    if len(parts) == 2 and parts[0] == "apis":
        group = registry.api_group(parts[1])
        if group is None:
            raise PageNotFound()  # no API group of that name: the plain-text 404
        return group
    if len(parts) == 3 and parts[0] == "apis":
        resources = registry.resource_list(parts[1], parts[2])
        if resources is None:
            if not registry.group_versions(parts[1]):
                raise PageNotFound()
            raise not_found("", "", None)
        return resources
    if parts and parts[0] == "api" and len(parts) > 1:
        raise not_found("", "", None)  # the core API group exists: a JSON 404
    return None
