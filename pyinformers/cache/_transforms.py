"""Transforms: functions applied to every object before an informer stores it.

A transform receives an object freshly decoded from the API server (nobody
else holds it yet) and returns the object to cache. It runs on the reflector
thread for every listed and watched object, so it must be cheap; it may
modify its argument in place. An informer calls it exactly once per decoded
object (listed or watched); it should still be idempotent, so that an object
that already looks transformed passes through unchanged.

:func:`drop_managed_fields` is the informer factory's default: server-side
apply's ``metadata.managedFields`` are about 40% of a cached Pod and no
controller reads them. :func:`share_metadata_strings` is what the factory adds
for metadata-only informers: it makes the strings that repeat between objects
(namespaces, labels, owner references) one object each.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["drop_managed_fields", "chain", "share_metadata_strings"]

_intern = sys.intern
#: Label and annotation values longer than this are left alone (they rarely repeat).
_SHARED_VALUE_LENGTH = 64


def drop_managed_fields(obj: Any) -> Any:
    """Remove ``metadata.managedFields`` from ``obj`` (in place) and return it.

    Objects without metadata, or without managed fields, pass through
    unchanged; anything that is not a dict (a tombstone, say) too.
    """
    try:
        metadata = obj["metadata"]
        if "managedFields" in metadata:
            del metadata["managedFields"]
    except (KeyError, TypeError):
        pass
    return obj


def chain(*transforms: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """One transform applying ``transforms`` left to right (``None`` entries are skipped)."""
    steps = tuple(t for t in transforms if t is not None)
    for step in steps:
        if not callable(step):
            raise TypeError(f"a transform must be callable, got {step!r}")
    if len(steps) == 1:
        return steps[0]

    def chained(obj: Any) -> Any:
        for step in steps:
            obj = step(obj)
        return obj

    chained.__name__ = "chain(" + ", ".join(getattr(s, "__name__", repr(s)) for s in steps) + ")"
    return chained


def share_metadata_strings(obj: Any) -> Any:
    """Intern (:func:`sys.intern`) the strings of ``obj``'s metadata that repeat between objects; return ``obj``.

    The object's kind and apiVersion, its namespace, generateName and
    creationTimestamp, label and annotation keys and short values, and every
    string of its owner references become one shared string each, instead of
    one copy per cached object. Unique strings (name, uid, resourceVersion)
    are left alone. Measured on metadata-only Pods of a ReplicaSet: 2.3 KB ->
    1.4 KB of live memory per object. The strings are equal, so nothing a
    reader can see changes; interned strings are freed once no object holds
    them. Anything that is not a dict with a metadata dict passes through.
    """
    try:
        metadata = obj["metadata"]
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if type(kind) is str:
            obj["kind"] = _intern(kind)
        if type(api_version) is str:
            obj["apiVersion"] = _intern(api_version)
        for field in ("namespace", "generateName", "creationTimestamp"):
            value = metadata.get(field)
            if type(value) is str:
                metadata[field] = _intern(value)
        for field in ("labels", "annotations"):
            pairs = metadata.get(field)
            if pairs:
                metadata[field] = {
                    _intern(k) if type(k) is str else k: _intern(v)
                    if type(v) is str and len(v) <= _SHARED_VALUE_LENGTH
                    else v
                    for k, v in pairs.items()
                }
        for ref in metadata.get("ownerReferences") or ():
            for key, value in ref.items():
                if type(value) is str:
                    ref[key] = _intern(value)
    except (KeyError, TypeError, AttributeError):
        pass
    return obj
