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
importing the clock does not load the ``kubernetes`` client.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    # time
    "Clock": "pyinformers.clock",
    "RealClock": "pyinformers.clock",
    "FakeClock": "pyinformers.clock",
    "REAL_CLOCK": "pyinformers.clock",
    # talking to the API server
    "Resource": "pyinformers.api.resource",
    "ResourceClient": "pyinformers.api.client",
    "ListWatch": "pyinformers.api.listwatch",
    "ApiError": "pyinformers.api.errors",
    "NotFound": "pyinformers.api.errors",
    "AlreadyExists": "pyinformers.api.errors",
    "Conflict": "pyinformers.api.errors",
    "Gone": "pyinformers.api.errors",
    "Invalid": "pyinformers.api.errors",
    "Forbidden": "pyinformers.api.errors",
    "Unauthorized": "pyinformers.api.errors",
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
    "SharedIndexInformer": "pyinformers.cache.informer",
    "EventHandlerFuncs": "pyinformers.cache.processor",
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
    "Result": "pyinformers.controller.result",
    "EnqueueForObject": "pyinformers.controller.handlers",
    "EnqueueForOwner": "pyinformers.controller.handlers",
    "EnqueueMapped": "pyinformers.controller.handlers",
    "Manager": "pyinformers.controller.manager",
    "ConfigurationError": "pyinformers.api.config",
    # events
    "EventRecorder": "pyinformers.record.recorder",
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
