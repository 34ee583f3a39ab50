"""The fast lane: apply a change to the cache, then fan it out to the handlers.

Every change an informer receives ends in :meth:`Delivery.apply`, which
writes it to the :class:`~pyinformers.cache._store.Indexer` and then hands it
to the informer's :class:`~pyinformers.cache._processor.HandlerSet`, both
under the delivery lock. It is reached by exactly two entry points:

* **inline**, on the reflector's thread: once the cache has synced, a watch
  event that finds the :class:`~pyinformers.cache._delta_fifo.DeltaFIFO`
  empty is handed straight to :meth:`Delivery.apply`
  (:meth:`~pyinformers.cache._delta_fifo.DeltaFIFO.deliver_inline`). This is
  the steady state: socket, decode, FIFO check, cache, work queue, without a
  thread hand-off;
* **backlog**, on the informer's thread: whatever the FIFO queued (the
  initial list, a relist, a resync, events that arrived while a pop was in
  progress) is popped one key at a time into :meth:`Delivery.apply_popped`.

The inline contract, stated once: ``apply`` runs while the FIFO's lock is
held, so no pop, resync or other producer interleaves with it. It must
therefore be quick, must never call back into the FIFO nor wait for a thread
that does, and must apply the change completely before it returns. Handlers
that run on the applying thread (the built-in enqueue handlers, see
:func:`~pyinformers.cache._processor.runs_inline`) obey the same rules: they
only make a non-blocking ``queue.add``. Every other handler gets the change
in its own buffer and runs on its own thread.

Invariants:

* a change is in the cache before any handler hears of it, so a handler that
  reads the cache sees that change or a newer one;
* ``apply`` never raises: a change that cannot be applied is logged and
  counted (:attr:`Delivery.errors`), so one bad object never stops the
  reflector or the informer thread;
* the hand-off bound is the FIFO's (see ``HANDOFF_BOUND`` in
  :mod:`pyinformers.cache._informer`); nothing here queues.

:class:`ReflectorStore` is the other end of the lane: the FIFO as the
reflector writes it. Its ``add``/``update``/``delete``/``resync`` *are* the
FIFO's bound methods, so the per-event path gains no call.

Thread-safety: ``apply`` and ``apply_popped`` are called by the reflector and
the informer thread; the delivery lock (an ``RLock`` the informer also holds
while a late handler snapshots the cache) serialises them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from pyinformers.api.meta import describe
from pyinformers.cache._delta_fifo import DeltaFIFO, DeltaType
from pyinformers.cache._mutation import MutationDetector
from pyinformers.cache._notification import ChangeKind
from pyinformers.cache._processor import HandlerSet
from pyinformers.cache._store import Indexer
from pyinformers.cache._tombstone import DeletedFinalStateUnknown

__all__ = ["Delivery", "FingerprintedDelivery", "ReflectorStore"]

log = logging.getLogger("pyinformers.cache._informer")

_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC
_DELETED = DeltaType.DELETED
_ADD, _UPDATE, _DELETE = ChangeKind.ADD, ChangeKind.UPDATE, ChangeKind.DELETE


def _resource_version(obj: Any) -> str | None:
    try:
        return obj["metadata"].get("resourceVersion")
    except (KeyError, TypeError, AttributeError):
        return None


class Delivery:
    """Apply one change to the cache, then tell the handlers: the informer's one write path.

    :param informer_name: names the informer in log lines.
    :param indexer: the cache.
    :param handlers: the informer's handlers.
    :param lock: the delivery lock, shared with the informer.
    :param key_of: the FIFO's key function (for popped deltas).
    """

    __slots__ = ("_name", "_indexer", "_handlers", "_lock", "_key_of", "errors")

    def __init__(
        self,
        *,
        informer_name: str,
        indexer: Indexer,
        handlers: HandlerSet,
        lock: threading.RLock,
        key_of: Callable[[Any], str],
    ) -> None:
        self._name = informer_name
        self._indexer = indexer
        self._handlers = handlers
        self._lock = lock
        self._key_of = key_of
        #: Changes that could not be applied (logged, skipped).
        self.errors = 0

    def apply_popped(self, deltas: tuple, is_in_initial_list: bool) -> None:
        """The backlog entry: one key's popped deltas, oldest first (the FIFO's ``pop`` calls it)."""
        key_of = self._key_of
        apply = self.apply
        with self._lock:
            for delta in deltas:
                obj = delta.object
                apply(key_of(obj), delta.type, obj, is_in_initial_list)

    def apply(self, key: str, kind: DeltaType, obj: Any, is_in_initial_list: bool = False) -> None:
        """The inline entry (see the module's contract), and each popped delta's step.

        ``key`` is the key the FIFO computed; ``obj`` the transformed object,
        or a tombstone for a ``Deleted``. Never raises.
        """
        handlers = self._handlers
        try:
            with self._lock:
                if kind is _DELETED:
                    self._indexer.delete(
                        obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
                    )
                    handlers.distribute((_DELETE, obj, None), key)
                    return
                # One store lock per change, with the key the FIFO computed.
                old = self._indexer.put(key, obj)
                if old is not None:
                    # A resync, or a relist that found the object unchanged, only
                    # concerns handlers whose resync is due.
                    sync = kind is _SYNC or (
                        kind is _REPLACED and _resource_version(old) == _resource_version(obj)
                    )
                    handlers.distribute((_UPDATE, old, obj), key, sync)
                elif is_in_initial_list:
                    handlers.distribute_initial(obj, key)
                else:
                    handlers.distribute((_ADD, obj, False), key)
        except Exception:
            self.errors += 1
            log.exception(
                "informer %s: cannot apply %s delta for %s", self._name, kind, describe(obj)
            )


class FingerprintedDelivery(Delivery):
    """:class:`Delivery` with the mutation detector on: the leaving version checked, the new fingerprinted.

    Fingerprinting happens before the change is applied (and so before any
    handler can hold the object), under the delivery lock. A detector that
    fails is logged and never stops the cache. With the detector off the
    informer uses a plain :class:`Delivery`: the check costs nothing then.
    """

    __slots__ = ("_detector",)

    def __init__(self, *, detector: MutationDetector, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._detector = detector

    def apply(self, key: str, kind: DeltaType, obj: Any, is_in_initial_list: bool = False) -> None:
        detector = self._detector
        with self._lock:
            try:
                old = self._indexer.get_by_key(key)
                if kind is _DELETED:
                    detector.forget(key, old)
                else:
                    detector.record(key, obj, old)
            except Exception:  # the detector must never stop the cache
                log.exception("informer %s: the mutation detector failed on %s", self._name, key)
            Delivery.apply(self, key, kind, obj, is_in_initial_list)


class ReflectorStore:
    """The DeltaFIFO as the reflector writes it, plus a call after each ``replace``.

    The informer notices its sync after popping the initial list's last item;
    an initial list with no items leaves nothing to pop, so the call after
    ``replace`` is what marks that sync (and wakes ``wait_for_cache_sync``) at once.
    The other writes are the FIFO's own bound methods: nothing is added to the
    per-event path.

    Listed objects reach ``replace`` transformed: the reflector applies the
    FIFO's :meth:`~pyinformers.cache._delta_fifo.DeltaFIFO.transform_listed` to
    each as it is decoded (its ``list_transform``), so ``replace`` is told not
    to transform them again.
    """

    __slots__ = ("add", "update", "delete", "resync", "_replace", "_on_replace")

    def __init__(self, fifo: DeltaFIFO, *, on_replace: Callable[[], Any]) -> None:
        self.add = fifo.add
        self.update = fifo.update
        self.delete = fifo.delete
        self.resync = fifo.resync
        self._replace = fifo.replace
        self._on_replace = on_replace

    def replace(self, objects: Any, resource_version: str) -> None:
        self._replace(objects, resource_version, transformed=True)
        self._on_replace()
