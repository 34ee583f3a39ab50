"""``object_reference(obj)``: an ``ObjectReference`` to a plain-dict object (client-go's ``ref.GetReference``).

The reference names an object in another object's fields (an Event's
``involvedObject`` / ``regarding``, a status field pointing at a child):
``apiVersion``, ``kind``, ``name`` and, when set, ``namespace``, ``uid`` and
``resourceVersion``. ``apiVersion`` and ``kind`` must be on the object (the
cache's objects always carry them; an object read from a list without them
cannot be referenced): a missing one is a ValueError naming the field.

Pure, thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["object_reference"]


def object_reference(obj: Mapping[str, Any], *, field_path: str = "") -> dict[str, str]:
    """An ``ObjectReference`` dict to ``obj``; ``field_path`` (e.g. ``spec.containers{web}``) when given."""
    if not isinstance(obj, Mapping):
        raise ValueError(
            f"object_reference: objects are referenced as dicts, got {type(obj).__name__}"
        )
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        raise ValueError("object_reference: the object needs metadata.name")
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not kind or not api_version:
        raise ValueError(
            f"object_reference: object {metadata.get('name')!r} needs kind and apiVersion "
            f"(has kind={kind!r}, apiVersion={api_version!r})"
        )
    reference = {"apiVersion": str(api_version), "kind": str(kind), "name": str(metadata["name"])}
    for field in ("namespace", "uid", "resourceVersion"):
        if metadata.get(field):
            reference[field] = str(metadata[field])
    if field_path:
        reference["fieldPath"] = field_path
    return reference
