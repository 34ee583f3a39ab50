"""pyinformers.controller: write a ``reconcile(key)``, get a controller.

* :class:`Controller` -- the base class: ``watch()`` informers in the
  constructor, implement ``reconcile(key) -> Result | None``, ``run()``.
* :class:`Result` -- what a reconcile asks for next (done, requeue with
  backoff, look again after a delay); :class:`TerminalError` -- raised when
  retrying cannot help (logged once, counted, not retried).
* Reading your own writes: a key whose last reconcile wrote an object is
  held back until the cache shows that version (``read_your_writes``, on by
  default; ``consistency_timeout`` bounds the wait).
* Handlers (events -> keys): :class:`EnqueueForObject`,
  :class:`EnqueueForOwner`, :class:`EnqueueMapped`.
* Predicates (``Change -> bool``): :func:`generation_changed`,
  :func:`labels_changed`, :func:`annotations_changed`,
  :func:`resource_version_changed`, :func:`label_selector`, :func:`is_resync`,
  combined with :func:`all_of`, :func:`any_of`, :func:`not_`.
* :func:`install_crd` -- create a CRD and wait until the API server serves it.
* What a reconcile does to objects (controller-runtime's ``controllerutil``):
  :func:`create_or_update`, :func:`create_or_patch` (an
  :class:`OperationResult`), :func:`update_status` / :func:`update_object`
  (the stored object handed back in place), :func:`finalize` (kube-rs's
  ``finalizer()``: apply and cleanup around a finalizer).

The process that runs controllers (``Manager``, ``Operator``, probes, leader
election) is :mod:`pyinformers.manager`; its names imported from here still
work for one release, with a :class:`DeprecationWarning`.

Layering: imports ``clock``, ``api``, ``cache``, ``workqueue`` and
``leaderelection``; never ``testing``.
"""

from pyinformers._exports import lazy_face, publish
from pyinformers.cache import ChangeKind
from pyinformers.controller._change import Change
from pyinformers.controller._controller import (
    CacheSyncTimeout,
    Controller,
    InformersNotStarted,
    Watch,
    Watchable,
)
from pyinformers.controller._crds import install_crd, load_yaml
from pyinformers.controller._handlers import (
    BoundHandler,
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    EventHandler,
)
from pyinformers.controller._objects import (
    ObjectBeingDeleted,
    OperationResult,
    create_or_patch,
    create_or_update,
    finalize,
    merge_patch,
    update_object,
    update_status,
)
from pyinformers.controller._predicates import (
    Predicate,
    all_of,
    annotations_changed,
    any_of,
    generation_changed,
    is_resync,
    label_selector,
    labels_changed,
    not_,
    object_predicate,
    resource_version_changed,
)
from pyinformers.controller._result import Result
from pyinformers.controller._terminal import TerminalError

__all__ = [
    "BoundHandler",
    "CacheSyncTimeout",
    "Controller",
    "EnqueueForObject",
    "EnqueueForOwner",
    "EnqueueMapped",
    "Change",
    "EventHandler",
    "ChangeKind",
    "InformersNotStarted",
    "ObjectBeingDeleted",
    "OperationResult",
    "Predicate",
    "Result",
    "TerminalError",
    "Watch",
    "Watchable",
    "all_of",
    "annotations_changed",
    "any_of",
    "create_or_patch",
    "create_or_update",
    "finalize",
    "generation_changed",
    "install_crd",
    "load_yaml",
    "is_resync",
    "label_selector",
    "labels_changed",
    "merge_patch",
    "not_",
    "object_predicate",
    "resource_version_changed",
    "update_object",
    "update_status",
]

publish(globals(), __all__)

# Moved or renamed in 0.2 (CHANGELOG.rst); kept for one release.
__getattr__, _ = lazy_face(
    __name__,
    {},
    globals(),
    deprecated={
        **{
            name: f"pyinformers.manager.{name}"
            for name in (
                "ANY_PORT",
                "ApiServerAuth",
                "ConfigurationError",
                "LeaderElectionConfig",
                "Manager",
                "ShardingConfig",
                "TLSFiles",
            )
        },
        # Renamed in 0.2: one vocabulary of change from the informer to the predicates.
        "Event": "pyinformers.controller.Change",
        "EventKind": "pyinformers.cache.ChangeKind",
    },
)
