"""The :class:`Controller` base class: informers in, keys through a queue, ``reconcile(key)`` out.

A controller is a subclass with a ``reconcile(key)``. In its constructor it
wires informers to its rate-limiting work queue with :meth:`Controller.watch`;
:meth:`Controller.run` waits for those informers' caches, starts worker
threads, and feeds them keys until it is stopped::

    class ConfigMapMirror(Controller):
        def __init__(self, factory):
            super().__init__("configmap-mirror", workers=2)
            self.configmaps = factory.lister(CONFIGMAPS)
            self.watch(factory.informer(CONFIGMAPS), predicates=[labels_changed])

        def reconcile(self, key):
            namespace, name = split_key(key)
            cm = self.configmaps.namespace(namespace).get(name)
            if cm is None:
                return None          # gone: nothing to do
            ...                      # make the world match cm
            return Result(requeue_after=300)

What a reconcile's outcome does to its key (see :mod:`.result`):

==================================  ==========================================  ===================
reconcile                           the key                                      ``result`` label
==================================  ==========================================  ===================
returns ``None`` / ``Result()``     ``forget`` (backoff reset)                   ``success``
returns ``Result(requeue=True)``    ``add_rate_limited`` (backoff grows)         ``requeue``
returns ``Result(requeue_after=s)`` ``forget`` + ``add_after(s)``                ``requeue_after``
raises                              ``add_rate_limited``, logged once            ``error``
==================================  ==========================================  ===================

Invariants:

* one key is never reconciled by two workers at once (the work queue hands
  out an item being processed to nobody else, and re-queues it on ``done``
  if it was added meanwhile);
* ``queue.done(key)`` is called after every reconcile, whatever happened;
* an exception in ``reconcile`` never ends a worker;
* a key added while its reconcile runs is reconciled again afterwards, so
  the last change to an object is always followed by a reconcile that saw it.

Threading: workers are daemon threads named
``pyinformers-worker-<controller>-<n>``. :meth:`start`, :meth:`stop` and
:meth:`run` may be called from any thread; ``reconcile`` runs concurrently
on up to ``workers`` threads (for different keys) and must be thread-safe in
what it shares.

Shutdown bounds are measured in real time (not on the injected clock): they
are about how long a process takes to exit, even in tests that fake time.
"""

from __future__ import annotations

import enum
import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyinformers.api._errors import Forbidden
from pyinformers.api._observe import end_observing, observe_writes
from pyinformers.api._permissions import UndeclaredVerb
from pyinformers.cache import detector_enabled, mutation_scope
from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.controller._consistency import DEFAULT_CONSISTENCY_TIMEOUT, ConsistencyGuard
from pyinformers.controller._handlers import EnqueueForObject, EventHandler
from pyinformers.controller._logcontext import enter as enter_log_context
from pyinformers.controller._logcontext import leave as leave_log_context
from pyinformers.controller._metrics import ControllerMetrics
from pyinformers.controller._predicates import Predicate
from pyinformers.controller._result import Result
from pyinformers.controller._terminal import TerminalError, brief, expected_reason
from pyinformers.workqueue import RateLimiter, RateLimitingQueue, default_controller_rate_limiter

__all__ = [
    "CacheSyncTimeout",
    "InformersNotStarted",
    "Watchable",
    "Controller",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "Watch",
]

# How often a blocked wait re-checks whether someone asked it to stop (real seconds).
_POLL = 0.05

#: Default bound (seconds) on draining in-flight reconciles at shutdown. Half the kubelet's default
#: grace period (30 s), so a stuck reconcile is abandoned with time left for the informers, the HTTP
#: servers and the event recorder to stop before SIGKILL (docs/operations.rst, docs/deploying.rst).
DEFAULT_SHUTDOWN_TIMEOUT = 15.0

#: Default soft bound (seconds) on one reconcile: past it, a warning names the key and
#: ``pyinformers_controller_reconcile_deadline_exceeded_total`` counts it.
DEFAULT_RECONCILE_DEADLINE = 60.0

_VALID_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class InformersNotStarted(RuntimeError):
    """A controller was started while informers it watches were not running (the factory was never started).

    Raised at once by :meth:`Controller.start` instead of waiting ``sync_timeout``
    for caches that cannot fill. ``informers`` names them.
    """

    def __init__(self, controller: str, informers: Sequence[str]) -> None:
        self.controller = controller
        self.informers = list(informers)
        super().__init__(
            f"controller {controller!r}: informer(s) {', '.join(self.informers)} not running; "
            "start the informer factory (factory.start()) before the controller, or let Manager.run() do both"
        )


class CacheSyncTimeout(TimeoutError):
    """The caches a controller watches did not sync in time.

    ``pending`` names what did not sync (informer names, or handler
    registrations still delivering their initial list).
    """

    def __init__(self, controller: str, timeout: float, pending: Sequence[str]) -> None:
        self.controller = controller
        self.timeout = timeout
        self.pending = list(pending)
        super().__init__(
            f"controller {controller!r}: caches did not sync within {timeout:g} s: "
            + "; ".join(self.pending)
        )


class Admission(Protocol):
    """Who may reconcile a key *now* (set by the Manager for leader election and sharding).

    ``enter(key)`` is asked by a worker right before ``reconcile(key)``; when
    it returns False the key is dropped (``forget`` + ``done``: another
    replica owns it, or this one stopped leading). When it returns True,
    ``exit(key)`` follows once the reconcile ended, whatever happened, so an
    admission can count the reconciles in flight and drain them.
    """

    def enter(self, key: Any) -> bool: ...

    def exit(self, key: Any) -> None: ...


class _Intake:
    """What handlers enqueue into: the queue's ``add``, or a filtered one (sharding drops foreign keys).

    ``add`` is an attribute, not a method, so the unfiltered path costs one
    attribute lookup more than calling the queue directly.
    """

    __slots__ = ("queue", "add")

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self.add = queue.add

    def set_filter(self, keep: Callable[[Any], bool] | None) -> None:
        if keep is None:
            self.add = self.queue.add
            return
        add = self.queue.add

        def filtered(key: Any) -> None:
            if keep(key):
                add(key)

        self.add = filtered

    def __repr__(self) -> str:
        return repr(self.queue)


class _State(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPED = "stopped"


@runtime_checkable
class Watchable(Protocol):
    """What :meth:`Controller.watch` needs of an informer: a
    :class:`~pyinformers.cache.SharedIndexInformer`, or a test double."""

    def add_event_handler(self, handler: Any, *, resync_period: float | None = None) -> Any:
        """Register ``handler``; return a registration (ideally with ``has_synced()``)."""

    def has_synced(self) -> bool:
        """True once the informer's cache holds its initial list."""


class Watch:
    """One ``watch()`` of a controller: an informer, its handler and predicates, the registration.

    Read-only for users (``controller.watches``); the registration is what
    the informer returned from ``add_event_handler``.
    """

    __slots__ = ("informer", "handler", "predicates", "registration")

    def __init__(
        self, informer: Watchable, handler: EventHandler, predicates: tuple, registration: Any
    ) -> None:
        self.informer = informer
        self.handler = handler
        self.predicates = predicates
        self.registration = registration

    def has_synced(self) -> bool:
        """True once the informer synced and this handler received its initial list."""
        has = getattr(self.registration, "has_synced", None)
        if has is not None:
            return bool(has())
        return bool(self.informer.has_synced())

    def __repr__(self) -> str:
        name = getattr(self.informer, "name", self.informer)
        return f"<Watch {name} {self.handler!r} predicates={len(self.predicates)}>"


class Controller:
    """Base class of controllers: subclass it and implement :meth:`reconcile`.

    ``name`` labels logs (logger ``pyinformers.controller.<name>``), metrics
    (label ``controller``), the work queue (metrics label ``name``) and
    worker threads; it defaults to the class attribute ``name`` if the
    subclass sets one, else the class name in lower case. ``workers`` is how
    many keys are reconciled concurrently. ``rate_limiter`` paces retries
    (``default_controller_rate_limiter()``: per-key exponential backoff from
    5 ms to 1000 s, under an overall 10 qps / burst 100 bucket). ``clock``
    drives the queue and the rate limiter (tests pass a ``FakeClock``);
    ``wall_clock`` (default: ``clock``) is what :meth:`now` reads, the
    reconcile's wall-clock "now" (Go's ``r.Now()``), so a test can fake the
    date a reconcile sees while retries back off in real time.
    ``read_your_writes`` (on by default) holds a key back until the cache
    shows what its last reconcile wrote, at most ``consistency_timeout``
    seconds (see :mod:`pyinformers.controller` and docs/controllers.rst).
    ``reconcile_deadline`` is a soft bound in seconds on one reconcile (None:
    none): an overdue one is logged with its key and counted on ``/metrics``
    (a thread cannot be killed: it runs on).
    ``metrics_registry`` is the Prometheus registry (the default one when
    None; ``False`` records nothing, for the queue as for the controller). ``sync_timeout`` bounds the wait for caches in :meth:`start`,
    ``shutdown_timeout`` the drain in :meth:`run`.

    A controller runs once: after :meth:`stop`, build a new one.
    """

    #: Subclasses may set a default name here instead of passing it.
    name: str = ""
    #: A controller must watch() at least one informer before it starts (a forgotten watch()
    #: is an error, not a silent idle controller). Set True in a subclass whose keys come
    #: from elsewhere (your own code calling ``self.queue.add``).
    watches_optional: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Make a subclass whose ``__init__`` forgets ``super().__init__()`` fail at construction, by name."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_pyinformers_checked", False):
            return

        @functools.wraps(init)
        def checked_init(self: Controller, *args: Any, **kw: Any) -> None:
            init(self, *args, **kw)
            if "_state" not in self.__dict__:
                raise TypeError(
                    f"{type(self).__name__}.__init__ must call super().__init__(...) (Controller's)"
                )

        checked_init._pyinformers_checked = True  # type: ignore[attr-defined]
        cls.__init__ = checked_init  # type: ignore[method-assign]

    if not TYPE_CHECKING:  # type checkers must keep seeing a typo in an attribute as an error

        def __getattr__(self, attribute: str) -> Any:
            # Only reached when normal lookup fails: before Controller.__init__ ran, say so.
            if attribute != "_state" and "_state" not in self.__dict__:
                raise AttributeError(
                    f"{type(self).__name__} has no attribute {attribute!r}: Controller.__init__ has not run yet; "
                    f"call super().__init__(...) first thing in {type(self).__name__}.__init__"
                )
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {attribute!r}")

    def __init__(
        self,
        name: str | None = None,
        *,
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        metrics_registry: Any = None,
        sync_timeout: float = 60.0,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        wall_clock: Clock | None = None,
        read_your_writes: bool = True,
        consistency_timeout: float = DEFAULT_CONSISTENCY_TIMEOUT,
        reconcile_deadline: float | None = DEFAULT_RECONCILE_DEADLINE,
    ) -> None:
        resolved = name or type(self).name or type(self).__name__.lower()
        if not isinstance(resolved, str) or not _VALID_NAME.match(resolved):
            raise ValueError(
                f"invalid controller name {resolved!r}: use letters, digits, '.', '_' and '-' "
                "(it labels metrics and names threads)"
            )
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an int >= 1, got {workers!r}")
        if sync_timeout <= 0 or shutdown_timeout < 0:
            raise ValueError("sync_timeout must be > 0 and shutdown_timeout >= 0")
        if reconcile_deadline is not None and not reconcile_deadline > 0:
            raise ValueError(
                f"reconcile_deadline must be > 0 seconds or None, got {reconcile_deadline!r}"
            )
        self.name = resolved
        # Under the mutation detector (tests, or PYINFORMERS_CACHE_MUTATION_DETECTOR=1), each reconcile
        # runs in a scope that blames it for cached objects it read and changed; otherwise nothing.
        self._mutation_scope = mutation_scope if detector_enabled() else None
        self.workers = workers
        self.clock: Clock = REAL_CLOCK if clock is None else clock
        #: What :meth:`now` reads (Go's injected ``Clock``); defaults to ``clock``.
        self.wall_clock: Clock = self.clock if wall_clock is None else wall_clock
        self.reconcile_deadline = None if reconcile_deadline is None else float(reconcile_deadline)
        self.sync_timeout = float(sync_timeout)
        self.shutdown_timeout = float(shutdown_timeout)
        self.log = logging.getLogger(f"pyinformers.controller.{resolved}")
        if rate_limiter is None:
            rate_limiter = default_controller_rate_limiter(clock=self.clock)
        #: The work queue of keys. Handlers add to it; workers drain it.
        self.queue = RateLimitingQueue(
            rate_limiter, name=resolved, clock=self.clock, metrics_registry=metrics_registry
        )
        self.metrics = ControllerMetrics(resolved, metrics_registry)
        self.metrics_registry = self.metrics.registry
        self.metrics.set_max_concurrent(workers)
        #: The stale-read guard (None when ``read_your_writes`` is False).
        self.consistency: ConsistencyGuard | None = (
            ConsistencyGuard(clock=REAL_CLOCK, timeout=consistency_timeout, log=self.log)
            if read_your_writes
            else None
        )
        self.metrics.track_guard(self.consistency)
        self.metrics.track_overdue(self._overdue_now)
        # All below guarded by _lock (reentrant: error messages call __repr__, which takes it).
        self._lock = threading.RLock()
        self._state = _State.NEW
        self._watches: list[Watch] = []
        self._threads: list[threading.Thread] = []
        # worker thread name -> key it is reconciling now (for shutdown diagnostics).
        # Not under _lock: each worker writes only its own entry, and single dict
        # operations (set, pop, copy) are atomic in CPython.
        self._in_flight: dict[str, Any] = {}
        # worker thread name -> (key, perf_counter at start, warned) of its reconcile (same rules).
        self._started_at: dict[str, list] = {}
        # Set by stop(): workers stop taking keys, run() and start() stop waiting.
        self._stopping = threading.Event()
        # Handlers enqueue through the intake; the admission gates each reconcile (both set by the Manager).
        self._intake = _Intake(self.queue)
        self._admission: Admission | None = None

    # -- wiring -----------------------------------------------------------------------
    def client(
        self,
        factory: Any,
        resource: Any,
        *,
        verbs: Sequence[str] | None = None,
        status_verbs: Sequence[str] = (),
        field_manager: str | None = None,
    ) -> Any:
        """``factory.client(resource, ...)`` whose server-side applies write as this controller.

        The field manager defaults to the controller's ``name``, so every apply of
        one controller is one entry in ``managedFields`` (see
        docs/server-side-apply.rst); ``verbs=("apply",)`` declares what apply needs.
        """
        return factory.client(
            resource,
            verbs=verbs,
            status_verbs=status_verbs,
            field_manager=field_manager or self.name,
        )

    def watch(
        self,
        informer: Watchable,
        handler: EventHandler | None = None,
        predicates: Sequence[Predicate] = (),
        *,
        resync_period: float | None = None,
    ) -> Watch:
        """Feed ``informer``'s events, filtered by ``predicates``, mapped by ``handler``, to the queue.

        ``handler`` defaults to :class:`~.handlers.EnqueueForObject`. Every
        informer watched here is waited for in :meth:`start`. ``resync_period``
        asks the informer for periodic resyncs of this handler (None: the
        informer's default). Call it before :meth:`start` (typically in the
        subclass's constructor).
        """
        if handler is None:
            handler = EnqueueForObject()
        if not isinstance(handler, EventHandler):
            raise TypeError(
                f"handler must be an EventHandler (EnqueueForObject, EnqueueForOwner, EnqueueMapped), got {handler!r}"
            )
        if not callable(getattr(informer, "add_event_handler", None)):
            raise TypeError(f"watch() needs an informer (with add_event_handler), got {informer!r}")
        preds = tuple(predicates)
        bound = handler.bind(self._intake, preds)
        with self._lock:
            if self._state is not _State.NEW:
                raise RuntimeError(f"{self!r}: watch() must be called before start()")
            if resync_period is None:
                registration = informer.add_event_handler(bound)
            else:
                registration = informer.add_event_handler(bound, resync_period=resync_period)
            w = Watch(informer, handler, preds, registration)
            self._watches.append(w)
            if self.consistency is not None:
                self.consistency.add_informer(informer)
        return w

    def check_watches(self) -> None:
        """Raise RuntimeError if this controller watches nothing (its queue would never fill)."""
        if not self.watches and not self.watches_optional:
            raise RuntimeError(
                f"controller {self.name!r} watches nothing: call self.watch(informer) in "
                f"{type(self).__name__}.__init__ (after super().__init__()), or set watches_optional = True "
                "if its keys come from elsewhere"
            )

    def set_key_filter(self, keep: Callable[[Any], bool] | None) -> None:
        """Enqueue only the keys ``keep(key)`` accepts (None: all). The Manager's sharding sets it."""
        self._intake.set_filter(keep)

    def set_admission(self, admission: Admission | None) -> None:
        """Gate every reconcile with ``admission`` (see :class:`Admission`); set before :meth:`start`."""
        with self._lock:
            if self._state is not _State.NEW:
                raise RuntimeError(f"{self!r}: set_admission() must be called before start()")
            self._admission = admission

    @property
    def watches(self) -> list[Watch]:
        """The watches wired so far (a copy)."""
        with self._lock:
            return list(self._watches)

    @property
    def informers(self) -> list[Any]:
        """The distinct informers this controller watches, in wiring order."""
        seen: list[Any] = []
        for w in self.watches:
            if not any(w.informer is s for s in seen):
                seen.append(w.informer)
        return seen

    # -- the user's part ------------------------------------------------------------
    def reconcile(self, key: str) -> Result | None:
        """Make the world match the desired state of ``key``; override this.

        Read the objects you need from listers (the cache), never from the
        event that enqueued the key: by the time a worker gets to it, the
        cache holds the latest state, and several events may have been folded
        into one reconcile. Return None when done, or a :class:`Result`; raise
        to retry with backoff.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement reconcile(key)")

    # -- running ----------------------------------------------------------------------
    def has_synced(self) -> bool:
        """True once every watched informer synced and delivered its initial list to us."""
        return all(w.has_synced() for w in self.watches)

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Block until :meth:`has_synced`; True when it did within ``timeout``.

        ``timeout`` defaults to ``sync_timeout``; real seconds. Returns False
        on timeout or if :meth:`stop` is called meanwhile (:meth:`start`
        raises :class:`CacheSyncTimeout` instead, naming what did not sync).
        Raises :class:`InformersNotStarted` at once when a watched informer
        was never started: it cannot sync, however long one waits.
        """
        try:
            self._wait_for_cache_sync_or_raise(timeout)
        except CacheSyncTimeout:
            return False
        return self.has_synced()

    def _wait_for_cache_sync_or_raise(self, timeout: float | None) -> None:
        timeout = self.sync_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        watches = self.watches
        idle = [
            str(getattr(w.informer, "name", w.informer))
            for w in watches
            if not w.informer.has_synced() and not getattr(w.informer, "is_running", lambda: True)()
        ]
        if idle:  # they cannot sync: say so now rather than after sync_timeout
            raise InformersNotStarted(self.name, sorted(set(idle)))
        for w in watches:
            wait = getattr(w.informer, "wait_for_cache_sync", None)
            while not self._stopping.is_set() and not w.has_synced():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                if wait is not None and not w.informer.has_synced():
                    wait(min(remaining, _POLL))
                else:  # the informer synced; its delivery to our handler is catching up
                    self._stopping.wait(min(remaining, 0.005))
        if self._stopping.is_set():
            return
        pending = [self._describe_pending(w) for w in watches if not w.has_synced()]
        if pending:
            raise CacheSyncTimeout(self.name, timeout, pending)

    @staticmethod
    def _describe_pending(w: Watch) -> str:
        informer = w.informer
        name = getattr(informer, "name", repr(informer))
        if not informer.has_synced():
            running = getattr(informer, "is_running", None)
            if running is not None and not running():
                return f"informer {name} is not running (start the informer factory before the controller)"
            return f"informer {name} has not finished its initial list"
        return f"informer {name} synced but has not delivered its initial list to {w.handler!r} yet"

    def start(self, workers: int | None = None) -> None:
        """Wait for the caches (:meth:`wait_for_cache_sync`), then start the workers and return.

        Raises :class:`CacheSyncTimeout` (and stops the controller) when the
        caches do not sync within ``sync_timeout``; ``RuntimeError`` if the
        controller was started before. If :meth:`stop` is called while it
        waits, it returns without starting workers.
        """
        count = self.workers if workers is None else workers
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"workers must be an int >= 1, got {count!r}")
        self.check_watches()
        with self._lock:
            if self._state is not _State.NEW:
                raise RuntimeError(
                    f"{self!r} was already started (or stopped); a controller runs once"
                )
            self._state = _State.STARTING
        try:
            self._wait_for_cache_sync_or_raise(None)
        except BaseException:
            self.stop(0)
            raise
        with self._lock:
            if self._stopping.is_set():
                return
            if count != self.workers:
                self.workers = count
                self.metrics.set_max_concurrent(count)
            for index in range(count):
                thread = threading.Thread(
                    target=self._work, name=f"pyinformers-worker-{self.name}-{index}", daemon=True
                )
                self._threads.append(thread)
            self._state = _State.RUNNING
            for thread in self._threads:
                thread.start()
        self.log.info("started %d worker(s) for %d informer(s)", count, len(self.informers))

    def stop(self, timeout: float | None = None) -> bool:
        """Stop: no new keys are taken, in-flight reconciles finish, workers exit.

        Waits at most ``timeout`` real seconds (default ``shutdown_timeout``)
        for in-flight reconciles; returns True when every worker exited, False
        (after logging the keys still being reconciled) otherwise. Handlers
        are removed from the informers; the informers themselves are not
        stopped (they may be shared). Idempotent, callable from any thread,
        including before :meth:`start`.
        """
        timeout = self.shutdown_timeout if timeout is None else timeout
        deadline = time.monotonic() + max(0.0, timeout)
        first = not self._stopping.is_set()
        self._stopping.set()
        with self._lock:
            self._state = _State.STOPPED
            threads = list(self._threads)
            watches = list(self._watches) if first else []
        self.queue.shutdown()
        for w in watches:
            remove = getattr(w.registration, "remove", None)
            if remove is not None:
                try:
                    remove()
                except Exception:
                    self.log.exception(
                        "could not remove the handler from informer %s",
                        getattr(w.informer, "name", w.informer),
                    )
        me = threading.current_thread()
        for thread in threads:
            if thread is not me:
                thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t for t in threads if t.is_alive() and t is not me]
        if alive:
            in_flight = self.in_flight()
            keys = sorted(str(in_flight.get(t.name, "?")) for t in alive)
            self.log.warning(
                "shutdown: %d reconcile(s) still running after %g s (keys: %s); leaving them behind",
                len(alive),
                timeout,
                ", ".join(keys),
            )
            return False
        if first and threads:
            self.log.info("stopped")
        return True

    def run(self, workers: int | None = None, stop: threading.Event | None = None) -> bool:
        """Start (waiting for caches), block until ``stop`` is set or :meth:`stop` is called, then drain.

        Returns what :meth:`stop` returned: True when every in-flight
        reconcile finished within ``shutdown_timeout``. Raises
        :class:`CacheSyncTimeout` when the caches do not sync in time.
        """
        self.start(workers)
        try:
            if stop is None:
                self._stopping.wait()
            else:
                while not stop.wait(_POLL) and not self._stopping.is_set():
                    pass
        finally:
            clean = self.stop(self.shutdown_timeout)
        return clean

    # -- the workers ------------------------------------------------------------------
    def _work(self) -> None:
        queue = self.queue
        stopping = self._stopping
        worker = threading.current_thread().name
        while True:
            key, shutdown = queue.get()
            if shutdown:
                return
            if stopping.is_set():  # shutting down: leave the backlog, finish nothing new
                queue.done(key)
                return
            self.process(key, worker)

    def process(self, key: Any, worker: str | None = None) -> str:
        """Reconcile ``key`` once and apply the outcome to the queue; return the ``result`` label.

        The worker loop calls this for every key it takes; tests may call it
        directly (after ``queue.get()``) to step a controller by hand. It
        calls ``queue.done(key)`` before returning, whatever happened. With an
        :class:`Admission` that refuses the key, the key is dropped and the
        label is ``"dropped"`` (nothing is reconciled or recorded).
        """
        queue = self.queue
        admission = self._admission
        guard = self.consistency
        if admission is not None and not admission.enter(key):
            queue.forget(key)  # not ours (another replica's shard, or we stopped leading): drop it
            queue.done(key)
            if guard is not None:
                guard.forget(key)  # what we wrote for it says nothing to its next owner
            return "dropped"
        try:
            if guard is not None:
                delay = guard.check(key)
                if delay is not None:  # the cache has not seen our last write yet: look again soon
                    # In real time even under a fake clock: it waits for an informer, not for a backoff.
                    REAL_CLOCK.call_later(delay, functools.partial(queue.add, key))
                    queue.done(key)
                    return "deferred"
            return self._process(key, worker)
        finally:
            if admission is not None:
                admission.exit(key)

    def _process(self, key: Any, worker: str | None) -> str:
        queue = self.queue
        metrics = self.metrics
        in_flight = self._in_flight
        worker = worker or threading.current_thread().name
        in_flight[worker] = key
        metrics.reconcile_started()
        started = time.perf_counter()
        deadline = self.reconcile_deadline
        if deadline is not None:
            self._started_at[worker] = [key, started, False]
            self._warn_overdue(started)
        guard = self.consistency
        outcome = "error"
        try:
            try:
                token = enter_log_context(self.name, key)
                listening = observe_writes(
                    None if guard is None else functools.partial(guard.record, key)
                )
                try:
                    scope = self._mutation_scope
                    if scope is None:
                        result = self.reconcile(key)
                    else:
                        with scope(f"reconcile of {self.name} ({key})"):
                            result = self.reconcile(key)
                finally:
                    end_observing(listening)
                    leave_log_context(token)
                outcome = self._apply(key, result)
            except TerminalError as err:
                # Retrying cannot fix it: say so once, count it, and wait for the next change.
                queue.forget(key)
                metrics.terminal_error()
                self.log.error(
                    "reconcile %r failed for good (not retried until the object changes): %s",
                    key,
                    brief(err) + (f" (caused by {brief(err.__cause__)})" if err.__cause__ else ""),
                )
            except (Forbidden, UndeclaredVerb) as err:
                # Retrying cannot grant a permission: say which one is missing, without a traceback.
                queue.add_rate_limited(key)
                self.log.error(
                    "reconcile %r failed (retry %d, with backoff): permission missing: %s; grant it in the "
                    "RBAC (regenerate it: python -m pyinformers rbac <module> ...)",
                    key,
                    queue.num_requeues(key),
                    " ".join(str(err).split()),
                )
            except Exception as err:
                queue.add_rate_limited(key)
                reason = expected_reason(err)
                if reason is None:
                    self.log.error(
                        "reconcile %r failed (retry %d, with backoff)",
                        key,
                        queue.num_requeues(key),
                        exc_info=True,
                    )
                else:  # a race every controller meets: one line, as logr prints it
                    self.log.info(
                        "reconcile %r: %s, retry %d with backoff: %s",
                        key,
                        reason,
                        queue.num_requeues(key),
                        brief(err),
                    )
                    self.log.debug("reconcile %r: %s", key, reason, exc_info=True)
        finally:
            queue.done(key)
            elapsed = time.perf_counter() - started
            metrics.reconcile_finished(outcome, elapsed)
            in_flight.pop(worker, None)
            if deadline is not None:
                entry = self._started_at.pop(worker, None)
                if elapsed > deadline and entry is not None and not entry[2]:
                    self._overdue(key, elapsed)
        return outcome

    # -- the soft deadline ------------------------------------------------------------
    def _overdue(self, key: Any, elapsed: float) -> None:
        self.metrics.deadline_exceeded()
        self.log.warning(
            "reconcile %r has run %.1f s, past its deadline of %g s (reconcile_deadline; "
            "a thread cannot be stopped: it runs on)",
            key,
            elapsed,
            self.reconcile_deadline,
        )

    def _warn_overdue(self, now: float) -> None:
        """Warn once about each running reconcile past the deadline (at a reconcile's start, at a scrape)."""
        deadline = self.reconcile_deadline
        if deadline is None:
            return
        for entry in list(self._started_at.values()):
            if not entry[2] and now - entry[1] > deadline:
                entry[2] = True
                self._overdue(entry[0], now - entry[1])

    def _overdue_now(self) -> int:
        """How many reconciles run past the deadline right now (warning about new ones)."""
        deadline = self.reconcile_deadline
        if deadline is None:
            return 0
        now = time.perf_counter()
        self._warn_overdue(now)
        return sum(1 for entry in list(self._started_at.values()) if now - entry[1] > deadline)

    # -- the reconcile's clock --------------------------------------------------------
    def now(self) -> datetime:
        """The reconcile's wall-clock time, an aware UTC ``datetime`` (Go's ``r.Now()``), from ``wall_clock``."""
        return datetime.fromtimestamp(self.wall_clock.time(), tz=timezone.utc)

    def _apply(self, key: Any, result: Any) -> str:
        queue = self.queue
        if result is None:
            queue.forget(key)
            return "success"
        if not isinstance(result, Result):
            raise TypeError(f"reconcile({key!r}) returned {result!r}; expected a Result or None")
        if result.requeue_after is not None:
            queue.forget(key)
            queue.add_after(key, result.requeue_after)
            return "requeue_after"
        if result.requeue:
            queue.add_rate_limited(key)
            return "requeue"
        queue.forget(key)
        return "success"

    # -- looking at it --------------------------------------------------------------
    def is_running(self) -> bool:
        """True between a successful :meth:`start` and :meth:`stop`."""
        with self._lock:
            return self._state is _State.RUNNING

    def workers_alive(self) -> int:
        """How many worker threads are alive."""
        with self._lock:
            return sum(1 for t in self._threads if t.is_alive())

    def healthy(self) -> bool:
        """False when the controller runs but a worker thread died (it should never happen)."""
        with self._lock:
            if self._state is not _State.RUNNING:
                return True
            return all(t.is_alive() for t in self._threads)

    def in_flight(self) -> dict[str, str]:
        """Worker thread name -> key it is reconciling right now (a snapshot)."""
        return self._in_flight.copy()

    def __repr__(self) -> str:
        with self._lock:
            state = self._state.value
            busy = len(self._in_flight)  # a len() is atomic
            watches = len(self._watches)
        return (
            f"<{type(self).__name__} {self.name!r} {state} workers={self.workers} "
            f"busy={busy} watches={watches} queue={self.queue!r}>"
        )
