"""pyinformers.api: talking to the API server.

* :class:`Resource` -- which kind of object (group, version, plural, kind, scope);
  built-ins in :mod:`pyinformers.resources`, custom ones via :meth:`Resource.from_crd`.
* :class:`ResourceClient` -- list (paged), watch (raw JSON lines), get and the
  writes, on dicts, through the official client's ``ApiClient``.
* :class:`ListWatch` / :class:`ListerWatcher` -- the seam a Reflector reads from.
* metadata-only reads: :class:`PartialObjectMetadata` (the static type of what a
  metadata-only informer caches) and the ``Accept`` strings that ask for it.
* typed errors (:class:`NotFound`, :class:`Conflict`, :class:`Gone`,
  :class:`TooManyRequests` ...) built by :func:`error_from_status`.
* selectors (:class:`LabelSelector`, :class:`FieldSelector`, their
  requirements and operators);
* object helpers live in :mod:`pyinformers.api.meta` only (keys, owner
  references, names, labels); their old aliases here warn for one release.
* :func:`to_model` -- a cached dict as the official client's typed model.
* :class:`TokenBucket`, :func:`set_client_throttle` -- a client-side QPS/burst
  throttle on every request of one ``ApiClient`` (off by default).
"""

from pyinformers._exports import lazy_face, publish
from pyinformers.api._client import ListPage, ResourceClient
from pyinformers.api._config import ConfigurationError, build_api_client
from pyinformers.api._errors import (
    AlreadyExists,
    ApiError,
    ApplyConflict,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    error_from_status,
)
from pyinformers.api._listwatch import ListerWatcher, ListWatch
from pyinformers.api._metadata import (
    ACCEPT_PARTIAL_OBJECT_METADATA,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
    ACCEPT_TABLE,
    MetadataNotServed,
    ObjectMeta,
    OwnerReference,
    PartialObjectMetadata,
    as_partial_object_metadata,
    is_partial_object_metadata,
)
from pyinformers.api._models import from_model, to_model
from pyinformers.api._permissions import (
    DeclaredClient,
    Grant,
    MissingPermission,
    Permissions,
    UndeclaredVerb,
)
from pyinformers.api._resource import Resource
from pyinformers.api._selectors import (
    FieldOperator,
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorOperator,
    as_field_selector,
    as_label_selector,
)
from pyinformers.api._throttle import TokenBucket, client_throttle, set_client_throttle
from pyinformers.api._watch import WatchEvent, WatchEventType, WatchStream

__all__ = [
    # resources
    "Resource",
    # client
    "ResourceClient",
    "ListPage",
    "WatchEvent",
    "WatchStream",
    "WatchEventType",
    "ListWatch",
    "ListerWatcher",
    # metadata-only reads
    "ACCEPT_PARTIAL_OBJECT_METADATA",
    "ACCEPT_PARTIAL_OBJECT_METADATA_LIST",
    "ACCEPT_TABLE",
    "MetadataNotServed",
    "ObjectMeta",
    "OwnerReference",
    "PartialObjectMetadata",
    "as_partial_object_metadata",
    "is_partial_object_metadata",
    # configuration
    "ConfigurationError",
    "build_api_client",
    # client-side throttle (off by default)
    "TokenBucket",
    "set_client_throttle",
    "client_throttle",
    # errors
    "ApiError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "ApplyConflict",
    "AlreadyExists",
    "Gone",
    "Invalid",
    "TooManyRequests",
    "ServerError",
    "error_from_status",
    # selectors
    "LabelSelector",
    "FieldSelector",
    "Requirement",
    "SelectorOperator",
    "FieldRequirement",
    "FieldOperator",
    "as_label_selector",
    "as_field_selector",
    # models
    "to_model",
    "from_model",
    # permissions (what a controller declares; RBAC is generated from it)
    "DeclaredClient",
    "MissingPermission",
    "Grant",
    "Permissions",
    "UndeclaredVerb",
]

publish(globals(), __all__)

# Object helpers were also exported here before 0.2; they live in pyinformers.api.meta.
_META_ALIASES = (
    "AlreadyOwnedError",
    "annotations",
    "controller_of",
    "deep_copy",
    "is_controlled_by",
    "labels",
    "name",
    "namespace",
    "object_key",
    "owner_references",
    "resource_version",
    "set_controller_reference",
    "split_key",
    "uid",
)
__getattr__, _ = lazy_face(
    __name__,
    {},
    globals(),
    deprecated={n: f"pyinformers.api.meta.{n}" for n in _META_ALIASES},
)
