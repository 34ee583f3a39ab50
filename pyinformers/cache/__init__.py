"""pyinformers.cache: the client side of list/watch.

* :class:`Indexer` -- the thread-safe, indexed store (the cache);
* :class:`DeltaFIFO`, :class:`Delta`, :class:`DeltaType`,
  :class:`DeletedFinalStateUnknown` -- the queue of changes between the
  reflector and the informer;
* :class:`Reflector` -- lists and watches one resource into a store;
* :class:`SharedIndexInformer` -- reflector + DeltaFIFO + indexer, with event
  handlers (:class:`EventHandlerFuncs`, :class:`HandlerRegistration`);
* :class:`Lister` -- reads the cache by name, namespace, selector or index;
* :class:`SharedInformerFactory` -- one shared informer per resource;
* :func:`drop_managed_fields` -- the default transform.

Names are imported on first use, so importing one submodule does not pull in
the others.
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "Reflector": "reflector",
    "SharedIndexInformer": "informer",
    "EventHandler": "processor",
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
