"""Validation of request bodies in the in-process API server.

:func:`check_body` checks what the URL decides (kind, apiVersion, namespace,
name; 400 on a mismatch) and :func:`validate_object` checks an object's
metadata the way the real server's generic validation does (422 ``Invalid``
with one cause per problem).

Pure functions; thread-safe.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pyinformers.api import selectors
from pyinformers.testing.registry import Registry, ResourceType
from pyinformers.testing.status import bad_request, invalid

__all__ = ["check_body", "validate_object"]

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def check_body(registry: Registry, rt: ResourceType, body: Any, namespace: str, name: Optional[str]) -> dict:
    """Check a request body's kind, apiVersion, namespace and name against the URL; completes and returns it."""
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a JSON object, not {type(body).__name__}")
    api_version = body.get("apiVersion")
    if api_version and api_version != rt.api_version:
        other_versions = {t.api_version for t in registry.types_for_storage_key(rt.storage_key)}
        if api_version not in other_versions:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
            )
    kind = body.get("kind")
    if kind and kind != rt.kind:
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
    meta = body.get("metadata")
    if meta is None:
        meta = body["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be a JSON object")
    if rt.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if name is not None and meta.get("name") and meta["name"] != name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    body["apiVersion"] = rt.api_version
    body["kind"] = rt.kind
    return body


def validate_object(rt: ResourceType, obj: dict) -> None:
    """Validate ``obj``'s metadata (name, labels, annotations, finalizers, ownerReferences); 422 with causes."""
    meta = obj["metadata"]
    name = meta.get("name") or ""
    causes = []
    if not isinstance(name, str) or not name:
        causes.append(("FieldValueRequired", "metadata.name", "name or generateName is required"))
    else:
        label_like = rt.storage_key in ("/namespaces", "/services")
        pattern, limit, what = (
            (_DNS_LABEL, 63, "RFC 1123 label") if label_like else (_DNS_SUBDOMAIN, 253, "RFC 1123 subdomain")
        )
        if len(name) > limit or not pattern.match(name):
            causes.append(
                (
                    "FieldValueInvalid",
                    "metadata.name",
                    f"Invalid value: {name!r}: a lowercase {what} must consist of lower case alphanumeric "
                    f"characters, '-'{'' if label_like else ' or .'}, start and end with an alphanumeric "
                    f"character, and be at most {limit} characters",
                )
            )
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            causes.append(("FieldValueInvalid", "metadata.labels", "labels must be a map of strings"))
        else:
            for key, value in labels.items():
                if not isinstance(value, str):
                    causes.append(("FieldValueInvalid", f"metadata.labels[{key}]", "label values must be strings"))
                    continue
                err = selectors.label_key_error(key) or selectors.label_value_error(value)
                if err:
                    causes.append(("FieldValueInvalid", f"metadata.labels[{key}]", err))
    for field in ("annotations",):
        value = meta.get(field)
        if value is not None and (not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())):
            causes.append(("FieldValueInvalid", f"metadata.{field}", f"{field} must be a map of strings"))
    finalizers = meta.get("finalizers")
    if finalizers is not None and (not isinstance(finalizers, list) or not all(isinstance(f, str) and f for f in finalizers)):
        causes.append(("FieldValueInvalid", "metadata.finalizers", "finalizers must be a list of non-empty strings"))
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            causes.append(("FieldValueInvalid", "metadata.ownerReferences", "ownerReferences must be a list"))
        else:
            controllers = 0
            for index, ref in enumerate(refs):
                if not isinstance(ref, dict) or not all(ref.get(k) for k in ("apiVersion", "kind", "name", "uid")):
                    causes.append(("FieldValueRequired", f"metadata.ownerReferences[{index}]", "apiVersion, kind, name and uid are required"))
                elif ref.get("controller"):
                    controllers += 1
            if controllers > 1:
                causes.append(("FieldValueInvalid", "metadata.ownerReferences", "Only one reference can have Controller set to true"))
    if causes:
        raise invalid(rt.kind, rt.group, name if isinstance(name, str) else "", causes)
