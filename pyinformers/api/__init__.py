"""pyinformers.api: talking to the API server.

* :class:`Resource` -- which kind of object (group, version, plural, kind, scope);
  built-ins in :mod:`pyinformers.resources`, custom ones via :meth:`Resource.from_crd`.
* :class:`ResourceClient` -- list (paged), watch (raw JSON lines), get and the
  writes, on dicts, through the official client's ``ApiClient``.
* :class:`ListWatch` / :class:`ListerWatcher` -- the seam a Reflector reads from.
* typed errors (:class:`NotFound`, :class:`Conflict`, :class:`Gone`,
  :class:`TooManyRequests` ...) built by :func:`error_from_status`.
* object helpers (:mod:`pyinformers.api.meta`) and selectors
  (:mod:`pyinformers.api._selectors`).
* :func:`to_model` -- a cached dict as the official client's typed model.
"""

from pyinformers._exports import publish
from pyinformers.api._client import ListPage, ResourceClient
from pyinformers.api._config import ConfigurationError, build_api_client
from pyinformers.api._errors import (
    AlreadyExists,
    ApiError,
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
from pyinformers.api.meta import (
    AlreadyOwnedError,
    annotations,
    controller_of,
    deep_copy,
    is_controlled_by,
    labels,
    name,
    namespace,
    object_key,
    owner_references,
    resource_version,
    set_controller_reference,
    split_key,
    uid,
)
from pyinformers.api._models import from_model, to_model
from pyinformers.api._permissions import DeclaredClient, Grant, Permissions, UndeclaredVerb
from pyinformers.api._resource import Resource
from pyinformers.api._selectors import (
    FieldSelector,
    LabelSelector,
    Requirement,
    as_field_selector,
    as_label_selector,
)
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
    # configuration
    "ConfigurationError",
    "build_api_client",
    # errors
    "ApiError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "AlreadyExists",
    "Gone",
    "Invalid",
    "TooManyRequests",
    "ServerError",
    "error_from_status",
    # meta
    "AlreadyOwnedError",
    "object_key",
    "split_key",
    "controller_of",
    "is_controlled_by",
    "set_controller_reference",
    "deep_copy",
    "name",
    "namespace",
    "uid",
    "resource_version",
    "labels",
    "annotations",
    "owner_references",
    # selectors
    "LabelSelector",
    "FieldSelector",
    "Requirement",
    "as_label_selector",
    "as_field_selector",
    # models
    "to_model",
    "from_model",
    # permissions (what a controller declares; RBAC is generated from it)
    "DeclaredClient",
    "Grant",
    "Permissions",
    "UndeclaredVerb",
]

publish(globals(), __all__)
