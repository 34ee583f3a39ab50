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
name's real type (``tests/test_public_api.py`` keeps the two lists equal).

The public surface is this package, its subpackages' ``__init__`` and
:mod:`pyinformers.api.meta`, :mod:`pyinformers.resources`,
:mod:`pyinformers.clock` and :mod:`pyinformers.testing`; every other module
is internal (see the "Public surface" section of ``docs/api.rst``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from pyinformers.clock import (
        Clock as Clock,
        RealClock as RealClock,
        FakeClock as FakeClock,
        REAL_CLOCK as REAL_CLOCK,
    )
    from pyinformers.api.resource import Resource as Resource
    from pyinformers.api.client import ResourceClient as ResourceClient, ListPage as ListPage
    from pyinformers.api.watch import (
        WatchEvent as WatchEvent,
        WatchEventType as WatchEventType,
        WatchStream as WatchStream,
    )
    from pyinformers.api.listwatch import ListWatch as ListWatch, ListerWatcher as ListerWatcher
    from pyinformers.api.config import ConfigurationError as ConfigurationError, build_api_client as build_api_client
    from pyinformers.api.errors import (
        ApiError as ApiError,
        BadRequest as BadRequest,
        Unauthorized as Unauthorized,
        Forbidden as Forbidden,
        NotFound as NotFound,
        MethodNotAllowed as MethodNotAllowed,
        Conflict as Conflict,
        AlreadyExists as AlreadyExists,
        Gone as Gone,
        Invalid as Invalid,
        TooManyRequests as TooManyRequests,
        ServerError as ServerError,
    )
    from pyinformers.api.models import to_model as to_model, from_model as from_model
    from pyinformers.api.meta import (
        object_key as object_key,
        split_key as split_key,
        deep_copy as deep_copy,
        controller_of as controller_of,
        is_controlled_by as is_controlled_by,
        set_controller_reference as set_controller_reference,
        AlreadyOwnedError as AlreadyOwnedError,
    )
    from pyinformers.api.selectors import LabelSelector as LabelSelector, FieldSelector as FieldSelector
    from pyinformers.cache.store import (
        Indexer as Indexer,
        default_indexers as default_indexers,
        NAMESPACE_INDEX as NAMESPACE_INDEX,
        OWNER_UID_INDEX as OWNER_UID_INDEX,
    )
    from pyinformers.cache.delta_fifo import DeletedFinalStateUnknown as DeletedFinalStateUnknown
    from pyinformers.cache.lister import Lister as Lister
    from pyinformers.cache.reflector import Reflector as Reflector
    from pyinformers.cache.reflector_options import ReflectorOptions as ReflectorOptions
    from pyinformers.cache.informer import SharedIndexInformer as SharedIndexInformer
    from pyinformers.cache.processor import (
        ResourceEventHandler as ResourceEventHandler,
        EventHandlerFuncs as EventHandlerFuncs,
        HandlerRegistration as HandlerRegistration,
    )
    from pyinformers.cache.factory import SharedInformerFactory as SharedInformerFactory
    from pyinformers.cache.transforms import drop_managed_fields as drop_managed_fields
    from pyinformers.workqueue.queue import Queue as Queue
    from pyinformers.workqueue.delaying import DelayingQueue as DelayingQueue
    from pyinformers.workqueue.rate_limiting import RateLimitingQueue as RateLimitingQueue
    from pyinformers.workqueue.rate_limiters import (
        RateLimiter as RateLimiter,
        ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter,
        ItemFastSlowRateLimiter as ItemFastSlowRateLimiter,
        BucketRateLimiter as BucketRateLimiter,
        MaxOfRateLimiter as MaxOfRateLimiter,
        default_controller_rate_limiter as default_controller_rate_limiter,
    )
    from pyinformers.controller.controller import (
        Controller as Controller,
        CacheSyncTimeout as CacheSyncTimeout,
        InformersNotStarted as InformersNotStarted,
    )
    from pyinformers.controller.result import Result as Result
    from pyinformers.controller.event import Event as Event, EventKind as EventKind
    from pyinformers.controller.handlers import (
        EventHandler as EventHandler,
        EnqueueForObject as EnqueueForObject,
        EnqueueForOwner as EnqueueForOwner,
        EnqueueMapped as EnqueueMapped,
    )
    from pyinformers.controller.predicates import (
        Predicate as Predicate,
        all_of as all_of,
        any_of as any_of,
        not_ as not_,
        generation_changed as generation_changed,
        labels_changed as labels_changed,
        annotations_changed as annotations_changed,
        resource_version_changed as resource_version_changed,
        label_selector as label_selector,
        is_resync as is_resync,
    )
    from pyinformers.controller.manager import Manager as Manager, ANY_PORT as ANY_PORT
    from pyinformers.controller.crds import install_crd as install_crd
    from pyinformers.record.recorder import EventRecorder as EventRecorder, EventType as EventType

#: public name -> the module that defines it (its home)
_EXPORTS = {
    # time
    "Clock": "pyinformers.clock",
    "RealClock": "pyinformers.clock",
    "FakeClock": "pyinformers.clock",
    "REAL_CLOCK": "pyinformers.clock",
    # talking to the API server
    "Resource": "pyinformers.api.resource",
    "ResourceClient": "pyinformers.api.client",
    "ListPage": "pyinformers.api.client",
    "WatchEvent": "pyinformers.api.watch",
    "WatchEventType": "pyinformers.api.watch",
    "WatchStream": "pyinformers.api.watch",
    "ListWatch": "pyinformers.api.listwatch",
    "ListerWatcher": "pyinformers.api.listwatch",
    "ConfigurationError": "pyinformers.api.config",
    "build_api_client": "pyinformers.api.config",
    "ApiError": "pyinformers.api.errors",
    "BadRequest": "pyinformers.api.errors",
    "Unauthorized": "pyinformers.api.errors",
    "Forbidden": "pyinformers.api.errors",
    "NotFound": "pyinformers.api.errors",
    "MethodNotAllowed": "pyinformers.api.errors",
    "Conflict": "pyinformers.api.errors",
    "AlreadyExists": "pyinformers.api.errors",
    "Gone": "pyinformers.api.errors",
    "Invalid": "pyinformers.api.errors",
    "TooManyRequests": "pyinformers.api.errors",
    "ServerError": "pyinformers.api.errors",
    "to_model": "pyinformers.api.models",
    "from_model": "pyinformers.api.models",
    # objects and selectors
    "object_key": "pyinformers.api.meta",
    "split_key": "pyinformers.api.meta",
    "deep_copy": "pyinformers.api.meta",
    "controller_of": "pyinformers.api.meta",
    "is_controlled_by": "pyinformers.api.meta",
    "set_controller_reference": "pyinformers.api.meta",
    "AlreadyOwnedError": "pyinformers.api.meta",
    "LabelSelector": "pyinformers.api.selectors",
    "FieldSelector": "pyinformers.api.selectors",
    # the cache
    "Indexer": "pyinformers.cache.store",
    "default_indexers": "pyinformers.cache.store",
    "NAMESPACE_INDEX": "pyinformers.cache.store",
    "OWNER_UID_INDEX": "pyinformers.cache.store",
    "DeletedFinalStateUnknown": "pyinformers.cache.delta_fifo",
    "Lister": "pyinformers.cache.lister",
    "Reflector": "pyinformers.cache.reflector",
    "ReflectorOptions": "pyinformers.cache.reflector_options",
    "SharedIndexInformer": "pyinformers.cache.informer",
    "ResourceEventHandler": "pyinformers.cache.processor",
    "EventHandlerFuncs": "pyinformers.cache.processor",
    "HandlerRegistration": "pyinformers.cache.processor",
    "SharedInformerFactory": "pyinformers.cache.factory",
    "drop_managed_fields": "pyinformers.cache.transforms",
    # work queues
    "Queue": "pyinformers.workqueue.queue",
    "DelayingQueue": "pyinformers.workqueue.delaying",
    "RateLimitingQueue": "pyinformers.workqueue.rate_limiting",
    "RateLimiter": "pyinformers.workqueue.rate_limiters",
    "ItemExponentialFailureRateLimiter": "pyinformers.workqueue.rate_limiters",
    "ItemFastSlowRateLimiter": "pyinformers.workqueue.rate_limiters",
    "BucketRateLimiter": "pyinformers.workqueue.rate_limiters",
    "MaxOfRateLimiter": "pyinformers.workqueue.rate_limiters",
    "default_controller_rate_limiter": "pyinformers.workqueue.rate_limiters",
    # controllers
    "Controller": "pyinformers.controller.controller",
    "CacheSyncTimeout": "pyinformers.controller.controller",
    "InformersNotStarted": "pyinformers.controller.controller",
    "Result": "pyinformers.controller.result",
    "Event": "pyinformers.controller.event",
    "EventKind": "pyinformers.controller.event",
    "EventHandler": "pyinformers.controller.handlers",
    "EnqueueForObject": "pyinformers.controller.handlers",
    "EnqueueForOwner": "pyinformers.controller.handlers",
    "EnqueueMapped": "pyinformers.controller.handlers",
    "Predicate": "pyinformers.controller.predicates",
    "all_of": "pyinformers.controller.predicates",
    "any_of": "pyinformers.controller.predicates",
    "not_": "pyinformers.controller.predicates",
    "generation_changed": "pyinformers.controller.predicates",
    "labels_changed": "pyinformers.controller.predicates",
    "annotations_changed": "pyinformers.controller.predicates",
    "resource_version_changed": "pyinformers.controller.predicates",
    "label_selector": "pyinformers.controller.predicates",
    "is_resync": "pyinformers.controller.predicates",
    "Manager": "pyinformers.controller.manager",
    "install_crd": "pyinformers.controller.crds",
    "ANY_PORT": "pyinformers.controller.manager",
    # events
    "EventRecorder": "pyinformers.record.recorder",
    "EventType": "pyinformers.record.recorder",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
