"""pyinformers.cache: the client side of list/watch.

* :class:`Indexer` -- the thread-safe, indexed store (the cache);
* :class:`DeltaFIFO`, :class:`Delta`, :class:`DeltaType`,
  :class:`DeletedFinalStateUnknown` -- the queue of changes between the
  reflector and the informer;
* :class:`Reflector` -- lists and watches one resource into a store, tuned
  by :class:`ReflectorOptions`;
* :class:`SharedIndexInformer` -- reflector + DeltaFIFO + indexer, with event
  handlers (:class:`ResourceEventHandler`, :class:`EventHandlerFuncs`,
  :class:`HandlerRegistration`);
* :class:`Lister` -- reads the cache by name, namespace, selector or index
  (:class:`NamespaceLister`: one namespace's objects);
* :class:`SharedInformerFactory` -- one shared informer per resource;
* :func:`drop_managed_fields` -- the default transform.

Names are imported on first use, so importing one submodule does not pull in
the others; type checkers read the explicit imports under ``TYPE_CHECKING``.
The modules of this package are internal: import from ``pyinformers.cache``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyinformers.cache.store import (
        Indexer as Indexer,
        IndexFunc as IndexFunc,
        NAMESPACE_INDEX as NAMESPACE_INDEX,
        OWNER_UID_INDEX as OWNER_UID_INDEX,
        namespace_index as namespace_index,
        controller_owner_uid_index as controller_owner_uid_index,
        default_indexers as default_indexers,
    )
    from pyinformers.cache.delta_fifo import (
        DeltaFIFO as DeltaFIFO,
        Delta as Delta,
        DeltaType as DeltaType,
        DeletedFinalStateUnknown as DeletedFinalStateUnknown,
        FIFOClosedError as FIFOClosedError,
    )
    from pyinformers.cache.lister import Lister as Lister, NamespaceLister as NamespaceLister
    from pyinformers.cache.reflector import Reflector as Reflector
    from pyinformers.cache.reflector_options import ReflectorOptions as ReflectorOptions
    from pyinformers.cache.informer import SharedIndexInformer as SharedIndexInformer
    from pyinformers.cache.processor import (
        ResourceEventHandler as ResourceEventHandler,
        EventHandlerFuncs as EventHandlerFuncs,
        HandlerRegistration as HandlerRegistration,
    )
    from pyinformers.cache.factory import SharedInformerFactory as SharedInformerFactory
    from pyinformers.cache.transforms import drop_managed_fields as drop_managed_fields, chain as chain

_EXPORTS = {
    "Indexer": "store",
    "IndexFunc": "store",
    "NAMESPACE_INDEX": "store",
    "OWNER_UID_INDEX": "store",
    "namespace_index": "store",
    "controller_owner_uid_index": "store",
    "default_indexers": "store",
    "DeltaFIFO": "delta_fifo",
    "Delta": "delta_fifo",
    "DeltaType": "delta_fifo",
    "DeletedFinalStateUnknown": "delta_fifo",
    "FIFOClosedError": "delta_fifo",
    "Lister": "lister",
    "NamespaceLister": "lister",
    "Reflector": "reflector",
    "ReflectorOptions": "reflector_options",
    "SharedIndexInformer": "informer",
    "ResourceEventHandler": "processor",
    "EventHandlerFuncs": "processor",
    "HandlerRegistration": "processor",
    "SharedInformerFactory": "factory",
    "drop_managed_fields": "transforms",
    "chain": "transforms",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
