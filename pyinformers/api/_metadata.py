"""Metadata-only reads: the ``PartialObjectMetadata`` form of any object, and its typed view.

kube-apiserver hands out any object (built-in or custom) as just its
metadata when the client asks for it in the ``Accept`` header, a content
negotiation of ``meta.k8s.io/v1``:

* one object or watch events: :data:`ACCEPT_PARTIAL_OBJECT_METADATA`
  (``application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1``), each
  object ``{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
  "metadata": {...}}``;
* a list: :data:`ACCEPT_PARTIAL_OBJECT_METADATA_LIST` (``as=PartialObjectMetadataList``),
  ``{"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
  "metadata": {"resourceVersion", "continue", ...}, "items": [...]}``;
* a table, as ``kubectl get`` asks: :data:`ACCEPT_TABLE` (``as=Table``).

A metadata-only informer (``factory.informer(SECRETS, metadata_only=True)``)
caches these: a Secret's data never reaches the process. The objects keep
the server's ``kind: PartialObjectMetadata``; :func:`is_partial_object_metadata`
tells them apart, :class:`PartialObjectMetadata` is their static type (a
``TypedDict``: it costs nothing at run time), and :func:`as_partial_object_metadata`
makes one from a full object (what the server does; the embedded server and
fakes use it).

Thread-safety: constants and pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = [
    "ACCEPT_PARTIAL_OBJECT_METADATA",
    "ACCEPT_PARTIAL_OBJECT_METADATA_LIST",
    "ACCEPT_TABLE",
    "META_API_VERSION",
    "MetadataNotServed",
    "ObjectMeta",
    "OwnerReference",
    "PartialObjectMetadata",
    "as_partial_object_metadata",
    "is_partial_object_metadata",
]

#: ``apiVersion`` of PartialObjectMetadata, its list and Table.
META_API_VERSION = "meta.k8s.io/v1"
#: ``Accept`` for one object, or a watch, as metadata only.
ACCEPT_PARTIAL_OBJECT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
#: ``Accept`` for a list as metadata only.
ACCEPT_PARTIAL_OBJECT_METADATA_LIST = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
)
#: ``Accept`` for a Table (server-side printing, as ``kubectl get`` asks for it).
ACCEPT_TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    """``metadata`` of any object (the fields a controller reads; managedFields are dropped by default)."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    managedFields: list[dict[str, Any]]


class PartialObjectMetadata(TypedDict):
    """An object as metadata only (``meta.k8s.io/v1``), as a metadata-only informer caches it."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta


class MetadataNotServed(Exception):
    """The server answered a metadata-only request with something else (it does not serve the negotiation)."""


def is_partial_object_metadata(obj: Any) -> bool:
    """True for a ``PartialObjectMetadata`` object (what a metadata-only informer caches)."""
    return (
        isinstance(obj, Mapping)
        and obj.get("kind") == "PartialObjectMetadata"
        and obj.get("apiVersion") == META_API_VERSION
    )


def as_partial_object_metadata(
    obj: Mapping[str, Any], metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``obj``'s metadata as a new ``PartialObjectMetadata`` dict (the metadata itself is shared, not copied).

    ``metadata`` replaces ``obj``'s (a server serving an older version, say).
    """
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": META_API_VERSION,
        "metadata": (obj.get("metadata") or {}) if metadata is None else metadata,
    }
