"""SharedIndexInformer: a reflector, a DeltaFIFO and an indexed cache, shared by many handlers.

Threads of one informer named ``N``:

* ``pyinformers-reflector-N`` lists and watches the API server and hands
  every change to the :class:`~pyinformers.cache._delta_fifo.DeltaFIFO`. Once
  the cache has synced, a watch event that finds the FIFO empty (the steady
  state) is applied by this thread itself: to the
  :class:`~pyinformers.cache._store.Indexer` (the cache every
  :class:`~pyinformers.cache._lister.Lister` reads), then to every handler
  (the fast lane, :mod:`pyinformers.cache._delivery`, which owns "apply to
  the cache, then fan out" and states the inline contract). A watch event
  then costs no thread hand-off before the work queue;
* ``pyinformers-informer-N`` pops whatever the FIFO queued -- the initial
  list, a relist, a resync, events that arrived while a pop was in progress
  -- and applies it the same way; in steady state it sleeps;
* ``pyinformers-handler-N-<k>``, one per registered user handler, calls the
  handler from its own buffer (see :mod:`pyinformers.cache._processor`). The
  built-in enqueue handlers run on the applying thread instead: they only
  make a non-blocking ``queue.add``.

Neither applying thread calls user code or blocks on a handler, so the cache
is updated at the pace of the watch whatever the handlers do.

Invariants:

* the cache is written only while the delivery lock (``_lock``) is held, by
  whichever thread applies the change (the reflector's inline, the
  informer's for a popped backlog); a change is in the cache before any
  handler is told about it, so a handler that reads the cache sees that
  change or a newer one;
* per key, every handler receives the changes in the order the API server
  made them: the DeltaFIFO hands a key's changes to one consumer at a time
  (an inline delivery happens only when nothing is queued, and holds the
  FIFO's lock, so no pop interleaves with it), and each handler's buffer is
  FIFO;
* a handler added after start gets the cache as it is at that moment as adds
  (``is_in_initial_list=True``) and then every later change: holding the
  delivery lock while snapshotting guarantees it misses nothing and sees
  nothing twice, whichever thread delivers;
* a change that cannot be applied (see :mod:`pyinformers.cache._object_errors`
  for objects a transform, key or index function fails on) is logged and
  skipped; it never ends either thread.

GC: filling a large cache with the cyclic garbage collector running costs
about five times as much as without it (the collector re-traverses the
growing cache). The reflector pauses the collector while it decodes the list;
the informer keeps it paused until the listed objects are in the cache (they
are inserted on the informer thread, after the reflector handed them over),
bounded by ``gc_pause_limit`` seconds. Both use the same process-wide,
reference-counted pause (:func:`pyinformers._gc_policy.gc_paused`), which
restores the collector's previous state when the last holder leaves.
Reference counting still frees everything acyclic meanwhile, and decoded JSON
is acyclic.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Generic

from pyinformers._exports import renamed_method
from pyinformers._gc_policy import gc_paused
from pyinformers.api._listwatch import ListerWatcher
from pyinformers.api._metadata import MetadataNotServed
from pyinformers.api._resource import ObjectT, Resource
from pyinformers.cache._delivery import Delivery, FingerprintedDelivery, ReflectorStore
from pyinformers.cache._delta_fifo import DeltaFIFO, FIFOClosedError, HandoffBudget
from pyinformers.cache._lister import Lister
from pyinformers.cache._memory import ESTIMATE_MAX_AGE, CacheMemory, estimate_cache_memory
from pyinformers.cache._mutation import MutationDetector, detector_enabled
from pyinformers.cache._object_errors import ObjectErrors, one_line
from pyinformers.cache._processor import (
    DEFAULT_BACKLOG_WARNING,
    HandlerRegistration,
    HandlerSet,
    ResourceEventHandlerFuncs,
    effective_resync_period,
    runs_inline,
    track_informer,
)
from pyinformers.cache._store import Indexer
from pyinformers.cache.reflector._options import ReflectorOptions
from pyinformers.cache.reflector._reflector import Reflector
from pyinformers.clock import REAL_CLOCK, Clock

__all__ = ["SharedIndexInformer", "ResourceEventHandlerFuncs", "HandlerRegistration"]

log = logging.getLogger(__name__)


#: Watch deltas the reflector may hand ahead of the informer thread (it waits beyond that,
#: until half are processed). Small on purpose: every pending delta keeps a freshly decoded
#: object alive, and a reflector decoding hundreds of events ahead drifts CPython's young
#: generation into collections that promote the churning cache into the oldest generation,
#: whose full collections then traverse the whole cache (see pyinformers._gc_policy). Measured
#: with 10,000 cached 5 KB Pods over 20,000 events: unbounded, ~680 young and 5 full
#: collections and ~120 us CPU per event; bounded at 4, no collection at all and ~70 us.
HANDOFF_BOUND = 4

#: What all informers of the process may hold ahead of their informer threads together: with
#: ten informers, ten bounds of four let the young generation drift again.
PROCESS_HANDOFF = HandoffBudget(8)

# How often an idle informer thread looks at its stop event and GC-pause bound.
_IDLE_POLL = 0.5


class SharedIndexInformer(Generic[ObjectT]):
    """An indexed, watch-driven cache of one resource, with event handlers.

    :param lister_watcher: the list/watch source (a
        :class:`~pyinformers.api._listwatch.ListWatch`, or a test fake).
    :param name: names threads and metric labels (``"v1/pods"``).
    :param resync_period: default resync period of handlers, seconds (0: no
        resync). A resync replays the cache to a handler as
        ``on_update(obj, obj)``; it does not talk to the API server.
    :param indexers: extra indexes ``{name: obj -> list[str]}`` for the cache.
    :param transform: ``obj -> obj`` applied to every object before it is
        stored (e.g. :func:`~pyinformers.cache._transforms.drop_managed_fields`). The reflector
        applies it to each list page as soon as the page is decoded, the FIFO to each
        watched object as the reflector hands it over.
        It receives freshly decoded objects and may modify them in place.
    :param clock: time for resync scheduling and the reflector's backoff.
    :param reflector_options: a :class:`~pyinformers.cache.ReflectorOptions`
        (page size, backoff, stall timeout, ...); a mapping of the same names
        is converted. Misspelt or ill-typed options raise here.
    :param pause_gc_during_sync: pause the cyclic GC while the initial list
        fills the cache (see the module docstring); at most
        ``gc_pause_limit`` seconds.
    :param metrics_registry: prometheus-client registry for the handler and
        cache gauges (default: the global one; ``False``: none).
    :param handler_backlog_warning: log a warning (at most every
        :data:`~pyinformers.cache._processor.BACKLOG_WARNING_INTERVAL` seconds per
        handler) while a handler has more notifications than this buffered;
        0 turns the warning off.
    :param mutation_detector: fingerprint every cached object and report
        handlers and reconciles that change one in place
        (:mod:`pyinformers.cache._mutation`); ``None`` (the default): on when
        ``PYINFORMERS_CACHE_MUTATION_DETECTOR=1`` or under the pytest plugin,
        else off, at no cost.

    Memory: :meth:`memory_estimate` estimates the cache's bytes from a sample
    (:mod:`pyinformers.cache._memory`); the estimate is logged once when the
    cache syncs and exported as ``pyinformers_informer_cache_bytes``.

    Health: :meth:`healthy` is False, with the reason in :meth:`health_problem`,
    once any of the informer's threads ended unexpectedly (a crash of the
    reflector, the informer loop or a handler thread: the cache no longer
    follows the server, or a handler no longer hears of it) and while the
    reflector keeps failing. One object that a transform, the key function or
    an index function fails on is *not* a health problem: it is logged,
    counted (:meth:`object_errors`) and handled as
    :mod:`pyinformers.cache._object_errors` says.

    Thread-safety: every public method may be called from any thread. An
    informer runs once: after :meth:`stop` it cannot be started again.
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        *,
        name: str,
        resync_period: float = 0,
        indexers: Mapping[str, Callable[[Any], list]] | None = None,
        transform: Callable[[Any], Any] | None = None,
        clock: Clock | None = None,
        reflector_options: ReflectorOptions | Mapping[str, Any] | None = None,
        pause_gc_during_sync: bool = True,
        gc_pause_limit: float = 300.0,
        metrics_registry: Any = None,
        handler_backlog_warning: int = DEFAULT_BACKLOG_WARNING,
        mutation_detector: bool | None = None,
    ) -> None:
        if not name:
            raise ValueError("an informer needs a name (it names its threads and metrics)")
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period!r}")
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be callable, got {transform!r}")
        self._lw = lister_watcher
        self._name = str(name)
        self._clock = clock if clock is not None else REAL_CLOCK
        self._default_resync = float(resync_period)
        # The reflector asks "should resync?" this often; lowered by handlers before start.
        self._resync_check_period = float(resync_period)
        self._reflector_options = ReflectorOptions.of(reflector_options)
        self._pause_gc = pause_gc_during_sync
        self._gc_pause_limit = gc_pause_limit

        # One object that a transform, the key function or an index function fails on is
        # reported here and handled as object_errors documents; every other object flows on.
        self._object_errors = ObjectErrors(self._name)
        report = self._object_errors.report
        self._indexer = Indexer(
            dict(indexers) if indexers else None,
            on_index_error=lambda index, obj, error: report(
                "index", obj, error, f"cached, but missing from index {index!r}"
            ),
        )
        # Each object is transformed exactly once: a watched one by the FIFO as the reflector
        # hands it over; a listed one by the reflector as soon as its page (or, in a streaming
        # list, its event) is decoded, with the FIFO's transform_listed, which reports a failure
        # as the FIFO would (see _ReflectorStore).
        self._transform = transform
        self._fifo = DeltaFIFO(
            known_objects=self._indexer,
            transform=transform,
            on_error=report,
            max_pending=HANDOFF_BOUND,
            budget=PROCESS_HANDOFF,
        )
        resource = getattr(lister_watcher, "resource", None)  # tells the lister the scope
        resource = resource if isinstance(resource, Resource) else None
        # The mutation detector, when on, takes over the apply path and the lister (so that off,
        # neither costs anything).
        self._mutation: MutationDetector | None = None
        if detector_enabled(mutation_detector):
            self._mutation = MutationDetector(self._name)
            self._lister: Lister[ObjectT] = _ReadNotingLister(
                self._indexer, resource=resource, detector=self._mutation, key_of=self._fifo.key_of
            )
        else:
            self._lister = Lister(self._indexer, resource=resource)
        self._memory: tuple[float, CacheMemory] | None = None

        # The delivery lock: held while a popped change is applied to the cache and
        # fanned out, and while a late handler snapshots the cache.
        self._lock = threading.RLock()
        self._handlers = HandlerSet(
            informer_name=self._name,
            lock=self._lock,
            clock=self._clock,
            backlog_warning=handler_backlog_warning,
            on_failure=self._fail,
        )
        # The fast lane (cache/_delivery.py): the one write path of the cache, fed inline by
        # the reflector thread once synced when nothing is queued, and by the informer thread's
        # pops otherwise.
        delivery_args: dict[str, Any] = {
            "informer_name": self._name,
            "indexer": self._indexer,
            "handlers": self._handlers,
            "lock": self._lock,
            "key_of": self._fifo.key_of,
        }
        self._delivery: Delivery = (
            Delivery(**delivery_args)
            if self._mutation is None
            else FingerprintedDelivery(detector=self._mutation, **delivery_args)
        )
        self._fifo.deliver_inline(self._delivery.apply)
        # Why the informer is broken for good (a thread of it ended unexpectedly), or None.
        self._failure: str | None = None

        self._state_lock = threading.Lock()
        self._started = False
        self._stop_event: threading.Event | None = None
        self._stopping = threading.Event()
        self._reflector: Reflector | None = None
        self._thread: threading.Thread | None = None
        self._reflector_thread: threading.Thread | None = None
        self._synced = False
        # Notified when the cache syncs, when a handler catches up with its initial adds, and
        # on stop: wait_for_cache_sync() sleeps on it. Reentrant, because has_synced() (called
        # while it is held) may notify it.
        self._synced_cond = threading.Condition(threading.RLock())
        track_informer(self, metrics_registry)
        self._metrics_registry = metrics_registry

    # -- properties ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def indexer(self) -> Indexer:
        """The cache. Read it (or better, :attr:`lister`); never write it, never mutate its objects."""
        return self._indexer

    @property
    def lister(self) -> Lister[ObjectT]:
        return self._lister

    @property
    def mutation_detector(self) -> MutationDetector | None:
        """The cache mutation detector, or None when it is off."""
        return self._mutation

    def memory_estimate(self, max_age: float = ESTIMATE_MAX_AGE) -> CacheMemory:
        """About how many bytes the cache holds: a sampled estimate, reused for ``max_age`` seconds.

        See :mod:`pyinformers.cache._memory` for how it is measured and how
        close it comes. Cheap (a few milliseconds) whatever the cache's size.
        """
        now = time.monotonic()
        memory = self._memory
        if memory is not None and now - memory[0] < max_age:
            return memory[1]
        estimate = estimate_cache_memory(self._indexer)
        self._memory = (now, estimate)
        return estimate

    @property
    def reflector(self) -> Reflector | None:
        """The reflector, once the informer runs (for its ``stats``)."""
        return self._reflector

    def registrations(self) -> list[HandlerRegistration]:
        """The handlers currently registered."""
        return self._handlers.registrations()

    # -- configuration --------------------------------------------------------------------
    def add_event_handler(
        self, handler: Any, *, resync_period: float | None = None
    ) -> HandlerRegistration:
        """Register ``handler`` and return its registration.

        ``handler`` is any object with some of ``on_add(obj,
        is_in_initial_list)``, ``on_update(old, new)``, ``on_delete(obj)``
        (:class:`ResourceEventHandlerFuncs` wraps plain functions). ``resync_period``
        defaults to the informer's. Before start, a shorter period than the
        informer's lowers the informer's resync check period; after start it
        is raised to the check period.

        Added while the informer runs, the handler first receives every cached
        object as ``on_add(obj, True)``, then every later change.
        """
        requested = self._default_resync if resync_period is None else float(resync_period)
        with self._lock:
            with self._state_lock:
                if self._stopping.is_set():
                    raise RuntimeError(f"informer {self._name!r} is stopped")
                started = self._started
                period, check = effective_resync_period(
                    requested, self._resync_check_period, started=started
                )
                self._resync_check_period = check
            if self._mutation is not None and not runs_inline(handler):
                handler = _checked_handler(handler, self._mutation, self._name, self._fifo.key_of)
            registration = self._handlers.new_registration(
                handler,
                resync_period=period,
                upstream_synced=self.has_synced,
                on_caught_up=self._notify_sync_progress,
            )
            self._handlers.add(registration)
            if started:
                for obj in self._indexer.list():
                    registration.add_initial(obj)
        return registration

    def remove_event_handler(self, registration: HandlerRegistration, timeout: float = 5.0) -> bool:
        """Same as ``registration.remove(timeout)``, for a registration of this informer.

        Raises ValueError for a registration another informer returned
        (removing it through this one would be a mistake, never an intent).
        """
        if not self._handlers.owns(registration):
            owner = getattr(registration, "informer_name", "?")
            raise ValueError(
                f"{registration!r} belongs to informer {owner!r}, not {self._name!r}: remove it through its own informer"
            )
        return registration.remove(timeout)

    def add_indexers(self, indexers: Mapping[str, Callable[[Any], list]]) -> None:
        """Add indexes to the cache; only before the informer starts."""
        with self._state_lock:
            if self._started:
                raise RuntimeError(
                    f"informer {self._name!r} has started: add indexers before start()"
                )
            self._indexer.add_indexers(dict(indexers))

    # -- state ------------------------------------------------------------------------------
    def has_synced(self) -> bool:
        """True once the initial list has been popped into the cache and handed to handlers' buffers.

        Handlers may still be working through it; a handler's own
        :meth:`HandlerRegistration.has_synced` says when it has.
        """
        if self._synced:
            return True
        if self._started and self._fifo.has_synced():
            self._mark_synced()
            return True
        return False

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait (in real seconds) until the cache has synced and every handler has handled it.

        Returns False on timeout, if the informer stops first, or once it is
        broken for good (a thread of it ended; :meth:`health_problem` says why).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._synced_cond:  # everything that changes the answer notifies it
            while True:
                if self.has_synced() and all(
                    r.has_synced() for r in self._handlers.registrations()
                ):
                    return True
                if self._stopping.is_set() or self._failure is not None:
                    return False  # stopped, or broken for good (health_problem() says why)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._synced_cond.wait(remaining)

    wait_for_sync = renamed_method(wait_for_cache_sync, "wait_for_sync")

    def _notify_sync_progress(self) -> None:
        """A handler caught up with its initial adds (its thread): wake wait_for_cache_sync()."""
        with self._synced_cond:
            self._synced_cond.notify_all()

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list, event or bookmark received ("" before the first list).

        Never behind the cache: the reflector records it before the change is queued, so it
        is set once :meth:`wait_for_cache_sync` returns, and may run ahead while the cache catches up.
        """
        reflector = self._reflector
        return reflector.last_sync_resource_version() if reflector is not None else ""

    def is_running(self) -> bool:
        if self._stopping.is_set():
            return False
        thread = self._thread
        return self._started or (thread is not None and thread.is_alive())

    def healthy(self) -> bool:
        """Running, no thread ended unexpectedly, and the reflector is not failing repeatedly."""
        return not self.health_problem()

    def health_problem(self) -> str:
        """Why the informer is not healthy (one line), or "" when it is."""
        failure = self._failure
        if failure is not None:
            return failure
        if not self.is_running():
            return "not running"
        reflector = self._reflector
        if reflector is None:
            return "not running"
        if not reflector.healthy():
            last = getattr(reflector, "last_error", "")
            return f"watch keeps failing: {last}" if last else "watch keeps failing"
        return ""

    def sync_problem(self) -> str:
        """Why the cache has not synced yet, for ``/readyz?verbose`` ("" once synced).

        Names the reflector's last list/watch error when there is one (a 404
        for a custom resource says whether its CRD is installed).
        """
        if self.has_synced():
            return ""
        problem = self._failure
        if problem is None:
            reflector = self._reflector
            last = getattr(reflector, "last_error", "") if reflector is not None else ""
            problem = f"last error: {last}" if last else ""
        return f"cache not synced; {problem}" if problem else "cache not synced"

    def object_errors(self) -> dict[str, int]:
        """``{stage: count}`` of objects a transform, key or index function failed on (see the class doc)."""
        return self._object_errors.counts()

    def _fail(self, reason: str) -> None:
        """Mark the informer broken for good (first reason wins); any thread."""
        with self._state_lock:
            if self._failure is not None or self._stopping.is_set():
                return
            self._failure = reason
        log.error("informer %s is unhealthy: %s", self._name, reason)
        with self._synced_cond:
            self._synced_cond.notify_all()  # wait_for_sync() returns False at once

    # -- running ------------------------------------------------------------------------------
    def start(self) -> None:
        """Run the informer in its own thread, ``pyinformers-informer-<name>``. Idempotent."""
        with self._state_lock:
            if self._stopping.is_set():
                raise RuntimeError(f"informer {self._name!r} was stopped; informers do not restart")
            if self._thread is not None or self._stop_event is not None:
                return
            stop = threading.Event()
            thread = threading.Thread(
                target=self._run_checked,
                args=(stop,),
                name=f"pyinformers-informer-{self._name}",
                daemon=True,
            )
            self._thread = thread
            # Started under the state lock, so stop() never sees a created but unstarted thread
            # (the thread's first step waits for this lock).
            thread.start()

    def run(self, stop: threading.Event) -> None:
        """Run the informer in the calling thread until ``stop`` is set (or :meth:`stop` is called)."""
        self._run_checked(stop)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the reflector, the informer thread and every handler thread.

        Returns promptly even while a watch is open (the reflector closes its
        stream). Waits up to ``timeout`` real seconds for the threads; returns
        True if they all ended.
        """
        deadline = time.monotonic() + timeout
        with self._state_lock:
            self._stopping.set()
            stop_event = self._stop_event
            reflector = self._reflector
        if stop_event is not None:
            stop_event.set()
        self._shutdown_components(reflector)
        ok = self._handlers.stop(timeout=max(0.0, deadline - time.monotonic()))
        for thread in (self._reflector_thread, self._thread):
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
                ok = ok and not thread.is_alive()
        with self._synced_cond:
            self._synced_cond.notify_all()
        if self._mutation is not None:
            self._mutation.check_all()
        return ok

    def _shutdown_components(self, reflector: Reflector | None) -> None:
        if reflector is not None:
            try:
                reflector.stop()
            except Exception:  # stopping must go on whatever the reflector does
                log.exception("informer %s: stopping the reflector failed", self._name)
        self._fifo.close()

    def _run_checked(self, stop: threading.Event) -> None:
        with self._state_lock:
            if self._stop_event is not None:
                raise RuntimeError(f"informer {self._name!r} already ran; informers do not restart")
            if self._stopping.is_set():
                return
            self._started = True
            self._stop_event = stop
            self._reflector = Reflector(
                self._lw,
                ReflectorStore(self._fifo, on_replace=self.has_synced),
                name=self._name,
                resync_period=self._resync_check_period,
                should_resync=self._handlers.should_resync,
                list_transform=self._fifo.transform_listed if self._transform is not None else None,
                clock=self._clock,
                metrics_registry=self._metrics_registry,
                options=self._reflector_options,
            )
            reflector = self._reflector
            self._reflector_thread = threading.Thread(
                target=self._run_reflector,
                args=(reflector, stop),
                name=f"pyinformers-reflector-{self._name}",
                daemon=True,
            )
            # The GC pause starts before the reflector can receive anything (a streaming list
            # delivers its objects through the watch, which the reflector does not pause for).
            gc_held = False
            if self._pause_gc:
                self._gc_pause = gc_paused()
                self._gc_pause.__enter__()
                gc_held = True
            # Started under the state lock for the same reason as the informer thread; the
            # reflector buffers into the FIFO, so handler threads may start after it.
            self._reflector_thread.start()
        gc_deadline = time.monotonic() + self._gc_pause_limit
        try:
            self._handlers.start()
            self._process_loop(stop, gc_held, gc_deadline)
            if not stop.is_set():
                self._fail("the informer thread ended unexpectedly (its FIFO closed)")
        except BaseException as error:
            log.error("informer %s: the informer thread crashed", self._name, exc_info=True)
            self._fail(f"the informer thread crashed: {one_line(error)}")
            if not isinstance(error, Exception):
                raise
        finally:
            if gc_held and not self._gc_released:
                self._release_gc()
            stop.set()
            self._stopping.set()
            self._shutdown_components(reflector)
            if threading.current_thread() is not self._thread:
                # run() in a caller's thread: leave nothing behind.
                self._handlers.stop(timeout=5.0)
                self._reflector_thread.join(5.0)

    _gc_released = False
    _gc_pause: Any = None

    def _release_gc(self) -> None:
        """Leave the GC pause (informer thread only; once)."""
        if not self._gc_released:
            self._gc_released = True
            self._gc_pause.__exit__(None, None, None)

    def _run_reflector(self, reflector: Reflector, stop: threading.Event) -> None:
        """The reflector thread: ending while the informer still runs breaks it for good."""
        try:
            reflector.run(stop)
        except (
            MetadataNotServed
        ) as error:  # a server that cannot serve this informer at all: one line
            if not stop.is_set():
                self._fail(one_line(error))
        except BaseException as error:  # a crash: the cache stops following the server
            if not stop.is_set():
                log.error("informer %s: the reflector crashed", self._name, exc_info=True)
                self._fail(f"the reflector thread crashed: {one_line(error)}")
        else:
            if not stop.is_set():
                self._fail("the reflector thread ended unexpectedly")
        if stop.is_set():
            self._fifo.close()  # wakes the informer thread at once

    def _process_loop(self, stop: threading.Event, gc_held: bool, gc_deadline: float) -> None:
        fifo = self._fifo
        process = self._delivery.apply_popped
        while not stop.is_set():
            try:
                fifo.pop(process, timeout=_IDLE_POLL)
            except FIFOClosedError:
                return
            if not self._synced:
                self.has_synced()  # marks the sync (and wakes wait_for_cache_sync) once the FIFO has it
            if gc_held and not self._gc_released:
                if self._synced or time.monotonic() >= gc_deadline:
                    self._release_gc()

    def _mark_synced(self) -> None:
        if not self._synced:
            self._synced = True
            with self._synced_cond:
                self._synced_cond.notify_all()
            try:
                log.info("%s synced: %s", self._name, self.memory_estimate(max_age=0))
            except Exception:  # an estimate must never stand in the way of the sync
                log.debug("%s: no memory estimate", self._name, exc_info=True)

    def __repr__(self) -> str:
        state = "stopped" if self._stopping.is_set() else "running" if self._started else "new"
        return (
            f"<SharedIndexInformer {self._name!r} {state} synced={self._synced} "
            f"objects={len(self._indexer)} handlers={len(self._handlers)} fifo={len(self._fifo)}>"
        )


class _ReadNotingLister(Lister[ObjectT]):
    """A Lister telling the mutation detector what each thread read (the detector is on)."""

    __slots__ = ("_detector", "_key_of")

    def __init__(
        self,
        indexer: Any,
        *,
        resource: Resource[ObjectT] | None,
        detector: MutationDetector,
        key_of: Callable[[Any], str],
    ) -> None:
        super().__init__(indexer, resource=resource)
        self._detector = detector
        self._key_of = key_of

    def get(self, name: str, *, namespace: str | None = None) -> ObjectT | None:
        obj = super().get(name, namespace=namespace)
        if obj is not None:
            self._detector.note_read(f"{namespace}/{name}" if namespace else name, obj)
        return obj

    def list(self, *, namespace: str | None = None, selector: Any = None) -> builtins.list[ObjectT]:
        objs = super().list(namespace=namespace, selector=selector)
        self._detector.note_reads(self._key_of, objs)
        return objs

    def by_index(self, index: str, value: str) -> builtins.list[ObjectT]:
        objs = super().by_index(index, value)
        self._detector.note_reads(self._key_of, objs)
        return objs


class _CheckedHandler:
    """A user's handler whose calls are checked by the mutation detector (see docs/cache.rst)."""

    def __init__(
        self, handler: Any, detector: MutationDetector, informer: str, key_of: Callable[[Any], str]
    ) -> None:
        self.handler = handler
        what = getattr(handler, "__qualname__", None) or type(handler).__qualname__
        for method in ("on_add", "on_update", "on_delete"):
            fn = getattr(handler, method, None)
            label = getattr(fn, "__qualname__", what) if fn is not None else what
            culprit = f"event handler {label} of {informer} ({method})"
            setattr(
                self, method, detector.wrap_handler(fn, culprit, key_of) if callable(fn) else fn
            )

    def __repr__(self) -> str:
        return repr(self.handler)


def _checked_handler(
    handler: Any, detector: MutationDetector, informer: str, key_of: Callable[[Any], str]
) -> Any:
    return _CheckedHandler(handler, detector, informer, key_of)
