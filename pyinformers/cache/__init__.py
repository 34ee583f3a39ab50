"""pyinformers.cache: the client side of list/watch.

* :class:`Indexer` -- the thread-safe, indexed store (the cache);
* :class:`DeltaFIFO`, :class:`Delta`, :class:`DeltaType`,
  :class:`DeletedFinalStateUnknown` -- the queue of changes between the
  reflector and the informer;
* :class:`Reflector` -- lists and watches one resource into a store, tuned
  by :class:`ReflectorOptions`;
* :class:`SharedIndexInformer` -- reflector + DeltaFIFO + indexer, with event
  handlers (:class:`ResourceEventHandler`, :class:`ResourceEventHandlerFuncs`,
  :class:`HandlerRegistration`);
* :class:`Lister` -- reads the cache by name, namespace, selector or index
  (:class:`NamespaceLister`: one namespace's objects);
* :class:`SharedInformerFactory` -- one shared informer per resource;
* :class:`ChangeKind` -- what happened to an object (ADD, UPDATE, DELETE):
  the one vocabulary from the informer's notifications to a controller's
  predicates (:class:`pyinformers.controller.Change`);
* :class:`MultiNamespaceInformer`, :class:`MultiNamespaceLister` -- several
  namespaces cached as one informer (``factory.informer(..., namespaces=[...])``);
* :class:`Selection` -- what one informer of a factory caches (namespaces,
  selectors, metadata only): the second half of the factory's informer keys;
* :class:`CacheMemory` -- an informer's sampled memory estimate;
* :class:`MutationDetector`, :class:`Mutation`, :func:`mutations`,
  :func:`clear_mutations`, :func:`mutation_scope`, :func:`detector_enabled`
  -- the cache mutation detector;
* :func:`read_only`, :func:`read_only_handler`, :func:`thaw`,
  :class:`ReadOnlyDict`, :class:`ReadOnlyList` -- read-only views of cached
  objects, for handlers that opt in;
* :func:`drop_managed_fields` -- the default transform; :func:`share_metadata_strings`
  -- the one metadata-only informers add; :func:`share_strings` -- the
  opt-in that shares every short string of cached objects; :func:`chain`.

Names are imported on first use, so importing one submodule does not pull in
the others; type checkers read the explicit imports under ``TYPE_CHECKING``.
The modules of this package are internal: import from ``pyinformers.cache``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinformers._exports import lazy_face

if TYPE_CHECKING:
    from pyinformers.cache._delta_fifo import (
        Delta as Delta,
    )
    from pyinformers.cache._delta_fifo import (
        DeltaFIFO as DeltaFIFO,
    )
    from pyinformers.cache._delta_fifo import (
        DeltaType as DeltaType,
    )
    from pyinformers.cache._delta_fifo import (
        FIFOClosedError as FIFOClosedError,
    )
    from pyinformers.cache._factory import Selection as Selection
    from pyinformers.cache._factory import SharedInformerFactory as SharedInformerFactory
    from pyinformers.cache._informer import SharedIndexInformer as SharedIndexInformer
    from pyinformers.cache._lister import Lister as Lister
    from pyinformers.cache._lister import NamespaceLister as NamespaceLister
    from pyinformers.cache._memory import CacheMemory as CacheMemory
    from pyinformers.cache._multi import (
        MultiNamespaceInformer as MultiNamespaceInformer,
    )
    from pyinformers.cache._multi import (
        MultiNamespaceLister as MultiNamespaceLister,
    )
    from pyinformers.cache._mutation import (
        Mutation as Mutation,
    )
    from pyinformers.cache._mutation import (
        MutationDetector as MutationDetector,
    )
    from pyinformers.cache._mutation import (
        clear_mutations as clear_mutations,
    )
    from pyinformers.cache._mutation import (
        detector_enabled as detector_enabled,
    )
    from pyinformers.cache._mutation import (
        mutation_scope as mutation_scope,
    )
    from pyinformers.cache._mutation import (
        mutations as mutations,
    )
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
    from pyinformers.cache._readonly import ReadOnlyDict as ReadOnlyDict
    from pyinformers.cache._readonly import ReadOnlyList as ReadOnlyList
    from pyinformers.cache._readonly import read_only as read_only
    from pyinformers.cache._readonly import read_only_handler as read_only_handler
    from pyinformers.cache._readonly import thaw as thaw
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
        IndexFunc as IndexFunc,
    )
    from pyinformers.cache._store import (
        controller_owner_uid_index as controller_owner_uid_index,
    )
    from pyinformers.cache._store import (
        default_indexers as default_indexers,
    )
    from pyinformers.cache._store import (
        namespace_index as namespace_index,
    )
    from pyinformers.cache._tombstone import (
        DeletedFinalStateUnknown as DeletedFinalStateUnknown,
    )
    from pyinformers.cache._transforms import chain as chain
    from pyinformers.cache._transforms import drop_managed_fields as drop_managed_fields
    from pyinformers.cache._transforms import share_metadata_strings as share_metadata_strings
    from pyinformers.cache._transforms import share_strings as share_strings
    from pyinformers.cache.reflector._options import ReflectorOptions as ReflectorOptions
    from pyinformers.cache.reflector._reflector import Reflector as Reflector

_EXPORTS = {
    "Indexer": "pyinformers.cache._store",
    "IndexFunc": "pyinformers.cache._store",
    "NAMESPACE_INDEX": "pyinformers.cache._store",
    "OWNER_UID_INDEX": "pyinformers.cache._store",
    "namespace_index": "pyinformers.cache._store",
    "controller_owner_uid_index": "pyinformers.cache._store",
    "default_indexers": "pyinformers.cache._store",
    "DeltaFIFO": "pyinformers.cache._delta_fifo",
    "Delta": "pyinformers.cache._delta_fifo",
    "DeltaType": "pyinformers.cache._delta_fifo",
    "DeletedFinalStateUnknown": "pyinformers.cache._tombstone",
    "FIFOClosedError": "pyinformers.cache._delta_fifo",
    "Lister": "pyinformers.cache._lister",
    "NamespaceLister": "pyinformers.cache._lister",
    "Reflector": "pyinformers.cache.reflector",
    "ReflectorOptions": "pyinformers.cache.reflector",
    "SharedIndexInformer": "pyinformers.cache._informer",
    "ResourceEventHandler": "pyinformers.cache._processor",
    "ResourceEventHandlerFuncs": "pyinformers.cache._processor",
    "HandlerRegistration": "pyinformers.cache._processor",
    "ChangeKind": "pyinformers.cache._notification",
    "SharedInformerFactory": "pyinformers.cache._factory",
    "drop_managed_fields": "pyinformers.cache._transforms",
    "chain": "pyinformers.cache._transforms",
    "share_metadata_strings": "pyinformers.cache._transforms",
    "share_strings": "pyinformers.cache._transforms",
    "CacheMemory": "pyinformers.cache._memory",
    "Selection": "pyinformers.cache._factory",
    "MultiNamespaceInformer": "pyinformers.cache._multi",
    "MultiNamespaceLister": "pyinformers.cache._multi",
    "Mutation": "pyinformers.cache._mutation",
    "MutationDetector": "pyinformers.cache._mutation",
    "clear_mutations": "pyinformers.cache._mutation",
    "detector_enabled": "pyinformers.cache._mutation",
    "mutation_scope": "pyinformers.cache._mutation",
    "mutations": "pyinformers.cache._mutation",
    "ReadOnlyDict": "pyinformers.cache._readonly",
    "ReadOnlyList": "pyinformers.cache._readonly",
    "read_only": "pyinformers.cache._readonly",
    "read_only_handler": "pyinformers.cache._readonly",
    "thaw": "pyinformers.cache._readonly",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_face(
    __name__,
    _EXPORTS,
    globals(),
    # client-go's name since 0.2 (CHANGELOG.rst); the old one is kept for one release.
    deprecated={"EventHandlerFuncs": "pyinformers.cache.ResourceEventHandlerFuncs"},
)
