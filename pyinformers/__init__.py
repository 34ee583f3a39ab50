"""pyinformers: Kubernetes controllers the client-go way.

Shared informers keep an indexed local cache of the cluster; event handlers
turn changes into ``namespace/name`` keys; rate-limiting work queues hand the
keys to worker threads; a controller's ``reconcile(key)`` reads the cache and
makes the world match the spec.

This module re-exports the names most users need; everything else lives in
the subpackages:

* :mod:`pyinformers.api` -- resources, the raw-JSON client, typed errors,
  object helpers, selectors;
* :mod:`pyinformers.resources` -- the catalog of built-in resources
  (``PODS``, ``DEPLOYMENTS``, ...);
* :mod:`pyinformers.cache` -- indexer, DeltaFIFO, reflector, informers,
  listers, the factory;
* :mod:`pyinformers.workqueue` -- queues and rate limiters;
* :mod:`pyinformers.controller` -- ``Controller``, handlers, predicates,
  ``Manager``;
* :mod:`pyinformers.record` -- the Events recorder;
* :mod:`pyinformers.testing` -- the in-process API server and pytest fixtures
  (import it explicitly; the library never does).

Names are imported on first use, so ``import pyinformers`` stays cheap and
importing the clock does not load the ``kubernetes`` client. Type checkers
read the explicit imports under ``TYPE_CHECKING`` below, so they see every
name's real type (``tests/surface/test_public_api.py`` keeps the two lists equal).

The public surface is this package, its subpackages' ``__init__`` and
:mod:`pyinformers.api.meta`, :mod:`pyinformers.resources`,
:mod:`pyinformers.clock` and :mod:`pyinformers.testing`; every other module
is internal (see the "Public surface" section of ``docs/api.rst``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinformers._exports import lazy_face

__version__ = "0.1.0"

if TYPE_CHECKING:
    from pyinformers.api._client import ListPage as ListPage
    from pyinformers.api._client import ResourceClient as ResourceClient
    from pyinformers.api._config import ConfigurationError as ConfigurationError
    from pyinformers.api._config import build_api_client as build_api_client
    from pyinformers.api._errors import (
        AlreadyExists as AlreadyExists,
    )
    from pyinformers.api._errors import (
        ApiError as ApiError,
    )
    from pyinformers.api._errors import (
        BadRequest as BadRequest,
    )
    from pyinformers.api._errors import (
        Conflict as Conflict,
    )
    from pyinformers.api._errors import (
        Forbidden as Forbidden,
    )
    from pyinformers.api._errors import (
        Gone as Gone,
    )
    from pyinformers.api._errors import (
        Invalid as Invalid,
    )
    from pyinformers.api._errors import (
        MethodNotAllowed as MethodNotAllowed,
    )
    from pyinformers.api._errors import (
        NotFound as NotFound,
    )
    from pyinformers.api._errors import (
        ServerError as ServerError,
    )
    from pyinformers.api._errors import (
        TooManyRequests as TooManyRequests,
    )
    from pyinformers.api._errors import (
        Unauthorized as Unauthorized,
    )
    from pyinformers.api._listwatch import ListerWatcher as ListerWatcher
    from pyinformers.api._listwatch import ListWatch as ListWatch
    from pyinformers.api._models import from_model as from_model
    from pyinformers.api._models import to_model as to_model
    from pyinformers.api._resource import Resource as Resource
    from pyinformers.api._selectors import FieldSelector as FieldSelector
    from pyinformers.api._selectors import LabelSelector as LabelSelector
    from pyinformers.api._watch import (
        WatchEvent as WatchEvent,
    )
    from pyinformers.api._watch import (
        WatchEventType as WatchEventType,
    )
    from pyinformers.api._watch import (
        WatchStream as WatchStream,
    )
    from pyinformers.api.meta import (
        AlreadyOwnedError as AlreadyOwnedError,
    )
    from pyinformers.api.meta import (
        controller_of as controller_of,
    )
    from pyinformers.api.meta import (
        deep_copy as deep_copy,
    )
    from pyinformers.api.meta import (
        is_controlled_by as is_controlled_by,
    )
    from pyinformers.api.meta import (
        object_key as object_key,
    )
    from pyinformers.api.meta import (
        set_controller_reference as set_controller_reference,
    )
    from pyinformers.api.meta import (
        split_key as split_key,
    )
    from pyinformers.cache._factory import SharedInformerFactory as SharedInformerFactory
    from pyinformers.cache._informer import SharedIndexInformer as SharedIndexInformer
    from pyinformers.cache._lister import Lister as Lister
    from pyinformers.cache._notification import ChangeKind as ChangeKind
    from pyinformers.cache._processor import (
        HandlerRegistration as HandlerRegistration,
    )
    from pyinformers.cache._processor import (
        ResourceEventHandler as ResourceEventHandler,
    )
    from pyinformers.cache._processor import (
        ResourceEventHandlerFuncs as ResourceEventHandlerFuncs,
    )
    from pyinformers.cache._store import (
        NAMESPACE_INDEX as NAMESPACE_INDEX,
    )
    from pyinformers.cache._store import (
        OWNER_UID_INDEX as OWNER_UID_INDEX,
    )
    from pyinformers.cache._store import (
        Indexer as Indexer,
    )
    from pyinformers.cache._store import (
        default_indexers as default_indexers,
    )
    from pyinformers.cache._tombstone import DeletedFinalStateUnknown as DeletedFinalStateUnknown
    from pyinformers.cache._transforms import drop_managed_fields as drop_managed_fields
    from pyinformers.cache.reflector._options import ReflectorOptions as ReflectorOptions
    from pyinformers.cache.reflector._reflector import Reflector as Reflector
    from pyinformers.clock import (
        REAL_CLOCK as REAL_CLOCK,
    )
    from pyinformers.clock import (
        Clock as Clock,
    )
    from pyinformers.clock import (
        FakeClock as FakeClock,
    )
    from pyinformers.clock import (
        RealClock as RealClock,
    )
    from pyinformers.controller._change import Change as Change
    from pyinformers.controller._controller import (
        CacheSyncTimeout as CacheSyncTimeout,
    )
    from pyinformers.controller._controller import (
        Controller as Controller,
    )
    from pyinformers.controller._controller import (
        InformersNotStarted as InformersNotStarted,
    )
    from pyinformers.controller._crds import install_crd as install_crd
    from pyinformers.controller._handlers import (
        EnqueueForObject as EnqueueForObject,
    )
    from pyinformers.controller._handlers import (
        EnqueueForOwner as EnqueueForOwner,
    )
    from pyinformers.controller._handlers import (
        EnqueueMapped as EnqueueMapped,
    )
    from pyinformers.controller._handlers import (
        EventHandler as EventHandler,
    )
    from pyinformers.controller._predicates import (
        Predicate as Predicate,
    )
    from pyinformers.controller._predicates import (
        all_of as all_of,
    )
    from pyinformers.controller._predicates import (
        annotations_changed as annotations_changed,
    )
    from pyinformers.controller._predicates import (
        any_of as any_of,
    )
    from pyinformers.controller._predicates import (
        generation_changed as generation_changed,
    )
    from pyinformers.controller._predicates import (
        is_resync as is_resync,
    )
    from pyinformers.controller._predicates import (
        label_selector as label_selector,
    )
    from pyinformers.controller._predicates import (
        labels_changed as labels_changed,
    )
    from pyinformers.controller._predicates import (
        not_ as not_,
    )
    from pyinformers.controller._predicates import (
        resource_version_changed as resource_version_changed,
    )
    from pyinformers.controller._result import Result as Result
    from pyinformers.manager._manager import ANY_PORT as ANY_PORT
    from pyinformers.manager._manager import Manager as Manager
    from pyinformers.record._recorder import EventRecorder as EventRecorder
    from pyinformers.record._recorder import EventType as EventType
    from pyinformers.workqueue._delaying import DelayingQueue as DelayingQueue
    from pyinformers.workqueue._queue import Queue as Queue
    from pyinformers.workqueue._rate_limiters import (
        BucketRateLimiter as BucketRateLimiter,
    )
    from pyinformers.workqueue._rate_limiters import (
        ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter,
    )
    from pyinformers.workqueue._rate_limiters import (
        ItemFastSlowRateLimiter as ItemFastSlowRateLimiter,
    )
    from pyinformers.workqueue._rate_limiters import (
        MaxOfRateLimiter as MaxOfRateLimiter,
    )
    from pyinformers.workqueue._rate_limiters import (
        RateLimiter as RateLimiter,
    )
    from pyinformers.workqueue._rate_limiters import (
        default_controller_rate_limiter as default_controller_rate_limiter,
    )
    from pyinformers.workqueue._rate_limiting import RateLimitingQueue as RateLimitingQueue

#: public name -> the module that defines it (its home)
_EXPORTS = {
    # time
    "Clock": "pyinformers.clock",
    "RealClock": "pyinformers.clock",
    "FakeClock": "pyinformers.clock",
    "REAL_CLOCK": "pyinformers.clock",
    # talking to the API server
    "Resource": "pyinformers.api",
    "ResourceClient": "pyinformers.api",
    "ListPage": "pyinformers.api",
    "WatchEvent": "pyinformers.api",
    "WatchEventType": "pyinformers.api",
    "WatchStream": "pyinformers.api",
    "ListWatch": "pyinformers.api",
    "ListerWatcher": "pyinformers.api",
    "ConfigurationError": "pyinformers.api",
    "build_api_client": "pyinformers.api",
    "ApiError": "pyinformers.api",
    "BadRequest": "pyinformers.api",
    "Unauthorized": "pyinformers.api",
    "Forbidden": "pyinformers.api",
    "NotFound": "pyinformers.api",
    "MethodNotAllowed": "pyinformers.api",
    "Conflict": "pyinformers.api",
    "AlreadyExists": "pyinformers.api",
    "Gone": "pyinformers.api",
    "Invalid": "pyinformers.api",
    "TooManyRequests": "pyinformers.api",
    "ServerError": "pyinformers.api",
    "to_model": "pyinformers.api",
    "from_model": "pyinformers.api",
    # objects and selectors
    "object_key": "pyinformers.api.meta",
    "split_key": "pyinformers.api.meta",
    "deep_copy": "pyinformers.api.meta",
    "controller_of": "pyinformers.api.meta",
    "is_controlled_by": "pyinformers.api.meta",
    "set_controller_reference": "pyinformers.api.meta",
    "AlreadyOwnedError": "pyinformers.api.meta",
    "LabelSelector": "pyinformers.api",
    "FieldSelector": "pyinformers.api",
    # the cache
    "Indexer": "pyinformers.cache",
    "default_indexers": "pyinformers.cache",
    "NAMESPACE_INDEX": "pyinformers.cache",
    "OWNER_UID_INDEX": "pyinformers.cache",
    "DeletedFinalStateUnknown": "pyinformers.cache",
    "Lister": "pyinformers.cache",
    "Reflector": "pyinformers.cache",
    "ReflectorOptions": "pyinformers.cache",
    "SharedIndexInformer": "pyinformers.cache",
    "ResourceEventHandler": "pyinformers.cache",
    "ResourceEventHandlerFuncs": "pyinformers.cache",
    "HandlerRegistration": "pyinformers.cache",
    "SharedInformerFactory": "pyinformers.cache",
    "drop_managed_fields": "pyinformers.cache",
    # work queues
    "Queue": "pyinformers.workqueue",
    "DelayingQueue": "pyinformers.workqueue",
    "RateLimitingQueue": "pyinformers.workqueue",
    "RateLimiter": "pyinformers.workqueue",
    "ItemExponentialFailureRateLimiter": "pyinformers.workqueue",
    "ItemFastSlowRateLimiter": "pyinformers.workqueue",
    "BucketRateLimiter": "pyinformers.workqueue",
    "MaxOfRateLimiter": "pyinformers.workqueue",
    "default_controller_rate_limiter": "pyinformers.workqueue",
    # controllers
    "Controller": "pyinformers.controller",
    "CacheSyncTimeout": "pyinformers.controller",
    "InformersNotStarted": "pyinformers.controller",
    "Result": "pyinformers.controller",
    "Change": "pyinformers.controller",
    "ChangeKind": "pyinformers.cache",
    "EventHandler": "pyinformers.controller",
    "EnqueueForObject": "pyinformers.controller",
    "EnqueueForOwner": "pyinformers.controller",
    "EnqueueMapped": "pyinformers.controller",
    "Predicate": "pyinformers.controller",
    "all_of": "pyinformers.controller",
    "any_of": "pyinformers.controller",
    "not_": "pyinformers.controller",
    "generation_changed": "pyinformers.controller",
    "labels_changed": "pyinformers.controller",
    "annotations_changed": "pyinformers.controller",
    "resource_version_changed": "pyinformers.controller",
    "label_selector": "pyinformers.controller",
    "is_resync": "pyinformers.controller",
    "Manager": "pyinformers.manager",
    "install_crd": "pyinformers.controller",
    "ANY_PORT": "pyinformers.manager",
    # events
    "EventRecorder": "pyinformers.record",
    "EventType": "pyinformers.record",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__, __dir__ = lazy_face(
    __name__,
    _EXPORTS,
    globals(),
    # Renamed in 0.2 (CHANGELOG.rst); kept for one release.
    deprecated={
        "Event": "pyinformers.controller.Change",
        "EventKind": "pyinformers.cache.ChangeKind",
        "ResourceEventHandlerFuncs": "pyinformers.cache.ResourceEventHandlerFuncs",
    },
)
