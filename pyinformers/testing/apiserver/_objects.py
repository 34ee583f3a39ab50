"""Helpers over stored objects (plain JSON dicts) shared by the server's modules.

Constants for the finalizers the server itself understands, the metadata
fields only the server may set, and small pure functions: timestamps, deep
copies, the part of an object whose change bumps ``metadata.generation``,
and content equality ignoring what every write changes.

Pure functions; thread-safe.
"""

from __future__ import annotations

import datetime
from typing import Any

import orjson

from pyinformers.testing.apiserver._registry import ResourceType

__all__ = [
    "ORPHAN_FINALIZER",
    "FOREGROUND_FINALIZER",
    "NAMESPACE_FINALIZER",
    "PROPAGATION_POLICIES",
    "SERVER_OWNED",
    "now_rfc3339",
    "copy_json",
    "meta_of",
    "spec_part",
    "same_content",
]

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
NAMESPACE_FINALIZER = "kubernetes"
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")
#: metadata fields a client cannot set: create drops them, update keeps the stored values
SERVER_OWNED = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def now_rfc3339(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def copy_json(obj: Any) -> Any:
    """A deep copy of JSON data (objects are plain JSON, so a round trip is exact and fast)."""
    return orjson.loads(orjson.dumps(obj))


def meta_of(obj: dict) -> dict:
    """``obj["metadata"]``, or an empty dict when it has none."""
    return obj.get("metadata") or {}


#: resources whose generation also moves when annotations change (the real Deployment strategy)
_ANNOTATIONS_BUMP_GENERATION = frozenset({"apps/deployments"})


def spec_part(rt: ResourceType, obj: dict) -> dict:
    """What a change of bumps ``metadata.generation``: all but metadata (and status, with a subresource).

    For Deployments, annotations count too, as on a real server.
    """
    skip = {"metadata", "apiVersion", "kind"}
    if rt.has_status:
        skip.add("status")
    part = {k: v for k, v in obj.items() if k not in skip}
    if rt.storage_key in _ANNOTATIONS_BUMP_GENERATION:
        part["metadata.annotations"] = meta_of(obj).get("annotations") or {}
    return part


def same_content(a: dict, b: dict) -> bool:
    """True when two versions of an object differ in nothing but resourceVersion and managedFields."""
    ma, mb = dict(meta_of(a)), dict(meta_of(b))
    for m in (ma, mb):
        m.pop("resourceVersion", None)
        m.pop("managedFields", None)
    return ma == mb and {k: v for k, v in a.items() if k != "metadata"} == {
        k: v for k, v in b.items() if k != "metadata"
    }
