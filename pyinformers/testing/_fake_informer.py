"""An informer with no server behind it, for unit tests of a controller's wiring and reconcile.

:class:`FakeInformer` is what :meth:`~pyinformers.controller.Controller.watch`
and a lister need of an informer: a cache (an
:class:`~pyinformers.cache.Indexer` with the default indexes), handlers, and
the sync state. The test writes the cache with :meth:`FakeInformer.add`,
:meth:`~FakeInformer.update` and :meth:`~FakeInformer.delete`; each change
reaches every handler at once, on the test's own thread, so after
``informer.add(obj)`` the controller's queue already holds the key. No
threads, no clock, no network: the controller's own behaviour (predicates,
owner mapping, reconcile against a lister) is all that is exercised.

``synced=False`` gives an informer that never syncs (a controller's
``start()`` then times out); ``running=False`` one whose factory was never
started. For the informer's own behaviour (lists, watches, relists) use
:class:`~pyinformers.testing.ApiServer` or
:class:`~pyinformers.testing.ScriptedListerWatcher`.

Thread-safety: one lock guards the cache and the handler list; handlers are
called after it is released, on the caller's thread, in registration order.
"""

from __future__ import annotations

import threading
from typing import Any

from pyinformers.api import meta
from pyinformers.api._resource import Resource
from pyinformers.cache._lister import Lister
from pyinformers.cache._store import Indexer, default_indexers

__all__ = ["FakeInformer", "FakeRegistration"]


class FakeRegistration:
    """A handler's registration on a :class:`FakeInformer`: ``has_synced()`` and ``remove()``, like the real one."""

    def __init__(self, informer: FakeInformer, handler: Any) -> None:
        self.informer = informer
        self.handler = handler

    def has_synced(self) -> bool:
        return self.informer.synced

    def remove(self, timeout: float | None = None) -> bool:
        self.informer._remove(self.handler)
        return True


class FakeInformer:
    """A cache the test writes; handlers hear of every change synchronously.

    :param resource: the resource it stands for (names it, and makes
        :meth:`lister` check namespaces as a real lister of it would).
    :param name: its name in controllers' errors (default ``str(resource)``).
    :param synced: what ``has_synced()`` answers (settable later).
    :param running: what ``is_running()`` answers (settable later).
    """

    def __init__(
        self,
        resource: Resource | None = None,
        *,
        name: str | None = None,
        synced: bool = True,
        running: bool = True,
    ) -> None:
        self.resource = resource
        self.name = name or (str(resource) if resource is not None else "fake")
        self.synced = synced
        self.running = running
        self.indexer = Indexer(default_indexers())
        self._lock = threading.Lock()
        #: the registered handlers, oldest first
        self.handlers: list[Any] = []
        #: the ``resync_period`` each handler was registered with, in the same order
        self.resync_periods: list[float | None] = []

    # -- what a controller uses ---------------------------------------------------------
    def add_event_handler(
        self, handler: Any, *, resync_period: float | None = None
    ) -> FakeRegistration:
        """Register ``handler``; it first receives the objects already cached, as ``on_add(obj, True)``."""
        with self._lock:
            self.handlers.append(handler)
            self.resync_periods.append(resync_period)
            current = self.indexer.list()
        for obj in current:
            _call(handler, "on_add", obj, True)
        return FakeRegistration(self, handler)

    def has_synced(self) -> bool:
        return self.synced

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        return self.synced

    def is_running(self) -> bool:
        return self.running

    def lister(self) -> Lister:
        """A :class:`~pyinformers.cache.Lister` over this informer's cache."""
        return Lister(self.indexer, resource=self.resource)

    # -- what the test does -------------------------------------------------------------
    def add(self, obj: dict) -> None:
        """Cache ``obj`` and tell every handler ``on_add(obj, False)``."""
        self.indexer.add(obj)
        self._tell("on_add", obj, False)

    def update(self, old: dict, new: dict) -> None:
        """Cache ``new`` and tell every handler ``on_update(old, new)``."""
        self.indexer.add(new)
        self._tell("on_update", old, new)

    def delete(self, obj: Any) -> None:
        """Drop ``obj`` (an object, or a ``DeletedFinalStateUnknown`` tombstone) and tell ``on_delete(obj)``."""
        key = getattr(obj, "key", None) or meta.object_key(obj)
        cached = self.indexer.get_by_key(key)
        if cached is not None:
            self.indexer.delete(cached)
        self._tell("on_delete", obj)

    def _tell(self, method: str, *args: Any) -> None:
        with self._lock:
            handlers = list(self.handlers)
        for handler in handlers:
            _call(handler, method, *args)

    def _remove(self, handler: Any) -> None:
        with self._lock:
            index = self.handlers.index(handler)
            del self.handlers[index]
            del self.resync_periods[index]

    def __repr__(self) -> str:
        return f"<FakeInformer {self.name} objects={len(self.indexer.list())} handlers={len(self.handlers)}>"


def _call(handler: Any, method: str, *args: Any) -> None:
    """Call ``handler.method(*args)`` when the handler implements it (every method of a handler is optional)."""
    fn = getattr(handler, method, None)
    if fn is not None:
        fn(*args)
