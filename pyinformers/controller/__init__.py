"""pyinformers.controller: write a ``reconcile(key)``, get a controller.

* :class:`Controller` -- the base class: ``watch()`` informers in the
  constructor, implement ``reconcile(key) -> Result | None``, ``run()``.
* :class:`Result` -- what a reconcile asks for next (done, requeue with
  backoff, look again after a delay).
* Handlers (events -> keys): :class:`EnqueueForObject`,
  :class:`EnqueueForOwner`, :class:`EnqueueMapped`.
* Predicates (``Event -> bool``): :func:`generation_changed`,
  :func:`labels_changed`, :func:`annotations_changed`,
  :func:`resource_version_changed`, :func:`label_selector`, :func:`is_resync`,
  combined with :func:`all_of`, :func:`any_of`, :func:`not_`.
* :func:`install_crd` -- create a CRD and wait until the API server serves it.
* :class:`Manager` -- runs controllers on one API client and one informer
  factory, with signal handling, ``/metrics``, ``/healthz`` and ``/readyz``;
  :class:`TLSFiles` and :class:`ApiServerAuth` secure its ``/metrics``;
  :class:`LeaderElectionConfig` and :class:`ShardingConfig` run it as
  several replicas (docs/ha.rst).

Layering: imports ``clock``, ``api``, ``cache``, ``workqueue`` and
``leaderelection``; never ``testing``.
"""

from pyinformers.controller.controller import CacheSyncTimeout, Controller, InformersNotStarted, Watch, Watchable
from pyinformers.controller.crds import install_crd
from pyinformers.controller.event import Event, EventKind
from pyinformers.controller.handlers import (
    BoundHandler,
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    EventHandler,
)
from pyinformers.controller.leader import LeaderElectionConfig
from pyinformers.controller.sharding import ShardingConfig
from pyinformers.controller.manager import ANY_PORT, ConfigurationError, Manager
from pyinformers.controller.metrics_auth import ApiServerAuth
from pyinformers.controller.predicates import (
    Predicate,
    all_of,
    annotations_changed,
    any_of,
    generation_changed,
    is_resync,
    label_selector,
    labels_changed,
    not_,
    resource_version_changed,
)
from pyinformers.controller.probes import TLSFiles
from pyinformers.controller.result import Result

__all__ = [
    "ANY_PORT",
    "ApiServerAuth",
    "BoundHandler",
    "CacheSyncTimeout",
    "ConfigurationError",
    "Controller",
    "EnqueueForObject",
    "EnqueueForOwner",
    "EnqueueMapped",
    "Event",
    "EventHandler",
    "EventKind",
    "InformersNotStarted",
    "LeaderElectionConfig",
    "Manager",
    "Predicate",
    "Result",
    "ShardingConfig",
    "TLSFiles",
    "Watch",
    "Watchable",
    "all_of",
    "annotations_changed",
    "any_of",
    "generation_changed",
    "install_crd",
    "is_resync",
    "label_selector",
    "labels_changed",
    "not_",
    "resource_version_changed",
]
