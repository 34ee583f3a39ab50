"""``Reflector``: keep a store in step with one collection of the API server.

A reflector syncs a collection, hands the result to a store with
``replace(objects, resource_version)``, then watches from that
resourceVersion and hands every change to the store (``add``/``update``/
``delete``). By default the sync is a streaming list (a watch with
``sendInitialEvents``, which goes on as the watch); on the list path
(``use_watch_list=False``, or a server without streaming lists) it is a list,
in pages where the server pages it. It is written as an explicit state machine, after kube-rs'
watcher: every recovery rule is one visible transition of :meth:`Reflector.step`.
The states themselves, the counters and the store protocol live in
:mod:`pyinformers.cache.reflector._states`; the timers in
:mod:`pyinformers.cache.reflector._timers`; what is specific to streaming lists
in :mod:`pyinformers.cache.reflector._watchlist`; how failures are worded in
:mod:`pyinformers.cache.reflector._errors`; the Prometheus collector in
:mod:`pyinformers.cache.reflector._metrics`.

States and transitions::

    NeedList ──► Listing(continue) ──page──► Listing(next continue) ... ──last page──► Watching(rv)
                   │ the first list asks resourceVersion=0 (the server's watch cache answers);
                   │ a relist after 410 asks a consistent read (no resourceVersion)
                   │ 410 on a continue token: restart with one unpaged, consistent list (Listing(paged=False))
                   │ other error: Backoff(→ the same page)
    WatchListing (the default; use_watch_list=False skips it): one watch with sendInitialEvents;
                   objects collected (transformed as they are decoded) until the bookmark annotated
                   k8s.io/initial-events-end, then replace(); then it goes on as a watch.
                   400/422/405 (a server without streaming lists): NeedList, and lists for good
                   the initial events not ended (the server ignores sendInitialEvents): a plain
                     bookmark before the end bookmark, initial_events_timeout of silence before it,
                     or the stream ended normally before it; a 410 to the request; or 403/404:
                     NeedList for this sync (a relist after 410 streams again)
                   network error / 5xx during the initial events: Backoff(→ WatchListing)
    Watching(rv) ──open watch from rv, consume events──►
                   normal close after a healthy watch: Watching(last rv)          (re-watch at once)
                   normal close of a watch that was short and empty: Backoff(→ Watching(last rv))
                   network error / 5xx / other ApiError: Backoff(→ Watching(last rv))
                   429: Backoff(at least Retry-After → Watching(last rv))
                   410 Gone/Expired: NeedList(consistent)                        (the only relist)
                   410 again before the watch after a relist delivered anything: Backoff(→ NeedList)
                   stalled (no event, bookmarks included, for stall_timeout): Backoff(→ Watching(last rv))
                   a malformed event (an object without metadata or name): Backoff(→ Watching(last rv)),
                     like a broken stream; the same twice in a row: Backoff(→ NeedList(consistent))
    Backoff(until, then) ──clock reaches until──► then
    any state ──stop──► Stopped

Bookmarks advance the last resourceVersion without touching the store, so a
re-watch after a quiet hour does not fall off the server's history window.
Every watch asks for them (``allowWatchBookmarks``).

Stalls. A watch that stays open but silent (a half-dead proxy or load
balancer) is caught by default: ``stall_timeout`` is
:data:`DEFAULT_STALL_TIMEOUT` (150 s). A real API server sends a bookmark on
an idle watch about once a minute (the first one on a freshly started, idle
server came after about 120 s), so a healthy watch is silent for at most
about two minutes; past 150 s the watch is closed and re-opened from the last
resourceVersion. A false alarm costs one re-watch request (no relist, no
event lost: the new watch starts where the old one stopped). A peer that
vanished is also caught by TCP keepalive on the watch connection (see
:func:`pyinformers.api._transport.enable_keepalive`).
Backoff delays come from :class:`~pyinformers.cache._backoff.Backoff` (0.8 s
doubling to 30 s, jittered, forgotten after a failure-free stretch).

Threads. :meth:`run` drives :meth:`step` on the calling thread; the only
other thread of the reflector's own is a periodic resync's, while it runs
(see Timers); the timers run on the clock's timer thread. :meth:`stop` may
be called from any thread: it closes the open watch stream (the blocked
reader returns at once) and wakes a backoff wait, so it never waits for the
network. An in-flight *list* request is not
interruptible; it ends within the client's request timeout. Counters are
written by the reflector's thread and read anywhere.

Timers (see :mod:`pyinformers.cache.reflector._timers`, which owns them). While a
watch is open, a stall timer closes it after ``stall_timeout`` of silence; while a
streaming list waits for its initial-events-end bookmark, a second silence
timer gives it up after ``initial_events_timeout``. :meth:`run` arms a periodic
resync (every ``resync_period``, once the first list is in the store, on a
short-lived thread ``pyinformers-reflector-<name>-resync``; ``stats.resyncs``
counts finished resyncs) and, when given a ``stop`` event, a poll of the real
clock that turns it into :meth:`stop`. ``run`` cancels them before it returns,
and joins a resync thread that is running, so nothing touches the store once
``run`` has returned.

Memory. A streaming list's objects arrive one per event and are transformed
as each is decoded (``list_transform``), so a large collection never exists in
full, managedFields included, at once: what the transform frees is reused by
the next object. A list answered in one response (``resourceVersion=0``) is
decoded whole before the transform runs; pages are transformed one by one.
While a list page is decoded, while a streaming list's initial events arrive,
and while the full list is handed to the store, the cyclic garbage collector
is paused (:func:`~pyinformers._gc_policy.gc_paused`, reference counted across
threads): it would otherwise re-traverse the growing cache over and over,
which makes filling a large cache several times slower.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pyinformers._gc_policy import gc_paused
from pyinformers._metrics import collector_for, resolve_registry
from pyinformers.api._errors import ApiError, Gone, TooManyRequests
from pyinformers.api._listwatch import ListerWatcher
from pyinformers.api._metadata import MetadataNotServed
from pyinformers.api._watch import WatchEventType, WatchStream
from pyinformers.api.meta import describe
from pyinformers.cache._backoff import Backoff
from pyinformers.cache.reflector._errors import MalformedEvent, describe_error, hint
from pyinformers.cache.reflector._metrics import ReflectorCollector
from pyinformers.cache.reflector._options import (
    DEFAULT_INITIAL_EVENTS_TIMEOUT,
    DEFAULT_STALL_TIMEOUT,
    ReflectorOptions,
)
from pyinformers.cache.reflector._states import (
    BackingOff,
    Listing,
    NeedList,
    ReflectorStats,
    ReflectorStore,
    State,
    Stopped,
    Watching,
    WatchListing,
)
from pyinformers.cache.reflector._timers import PeriodicResync, SilenceTimer, StopPoll
from pyinformers.cache.reflector._watchlist import (
    INITIAL_EVENTS_END_ANNOTATION,
    InitialEvents,
    StreamingListUnsupported,
    ends_initial_events,
    refuses_for_good,
    rejects_watch_list,
    review_list_permission,
)
from pyinformers.clock import REAL_CLOCK, Clock

__all__ = [
    "Reflector",
    "INITIAL_EVENTS_END_ANNOTATION",
    "DEFAULT_STALL_TIMEOUT",
    "DEFAULT_INITIAL_EVENTS_TIMEOUT",
    "MalformedEvent",
    "StreamingListUnsupported",
]

log = logging.getLogger("pyinformers.reflector")

# A watch that closes normally sooner than this with no event is treated as a failure
# (a server or proxy that drops watches at once must not be hammered).
_SHORT_WATCH = 1.0
# Consecutive failures after which healthy() reports False.
_UNHEALTHY_AFTER = 3
# Event types that carry an object the store keys (a BOOKMARK carries only a resourceVersion).
# The watch event types, by the names the API layer gives them (plain str
# constants: compared on every event, as cheaply as literals).
_ADDED, _MODIFIED, _DELETED, _BOOKMARK = (
    WatchEventType.ADDED,
    WatchEventType.MODIFIED,
    WatchEventType.DELETED,
    WatchEventType.BOOKMARK,
)
_OBJECT_EVENTS = frozenset((_ADDED, _MODIFIED, _DELETED))


# --------------------------------------------------------------------------- reflector


def _object_key(obj: dict) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else str(md.get("name"))


class Reflector:
    """List and watch one collection into a store, recovering from every fault (see the module doc).

    Arguments are keyword-only. The tunables come as one
    :class:`~pyinformers.cache.ReflectorOptions` (``options=``; a mapping of its
    fields is converted and validated), as an informer or factory takes them:

    * ``page_size`` -- items per list page (``limit``); 0 or None lists in one request.
    * ``use_watch_list`` -- sync with a streaming list (``sendInitialEvents``; the default) instead
      of a list. A lister-watcher whose ``supports_watch_list`` attribute is False (scripted
      fakes) is always listed.
    * ``initial_events_timeout`` -- a streaming list silent for this long before its
      initial-events-end bookmark is given up for a list (see the module doc).
    * ``min_watch_timeout`` / ``max_watch_timeout`` -- each watch asks the server to end it
      after a random number of seconds in this range (spreads reconnects).
    * ``backoff_initial`` / ``backoff_max`` -- the retry delays.
    * ``stall_timeout`` -- a watch with no event (bookmarks included) for this long is closed
      and re-opened from the last resourceVersion (default :data:`DEFAULT_STALL_TIMEOUT`,
      150 s); None turns detection off and relies on the client's read timeout (server
      timeout + 60 s, 6 to 11 minutes).
    * ``on_watch_error`` -- called (on the reflector's thread) with every list/watch error.

    Beside them, what only the reflector's owner knows:

    * ``resync_period`` / ``should_resync`` -- every ``resync_period`` seconds (0: never),
      call ``store.resync()`` if ``should_resync()`` (default: always) says so.
    * ``metrics_registry`` -- prometheus registry (default: the global one; ``False``: none).
    * ``rng`` -- the random source for jitter and watch timeouts (tests pass a seeded one).
    * ``list_transform`` -- ``obj -> obj`` applied to each listed object as soon as its list
      page (or, for a streaming list, its event) is decoded, never to the whole list at once,
      so what it drops (``managedFields``) is freed while the list is still being read and
      its memory is reused by the next page. An object it raises on is kept as decoded: the
      store sees it as listed. Watched objects are the store's to transform. An informer
      passes its FIFO's ``transform_listed`` (which reports a failure and stands in for the
      object) and has the FIFO's ``replace`` skip the transform: each object is transformed once.

    Thread-safety: :meth:`step`/:meth:`run` belong to one thread; :meth:`stop`,
    :attr:`stats`, :meth:`healthy` and the getters may be called from any
    thread; the timers run on the clock's timer thread (see the module doc).
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        store: ReflectorStore,
        *,
        name: str,
        options: ReflectorOptions | Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        resync_period: float = 0,
        should_resync: Callable[[], bool] | None = None,
        metrics_registry: Any = None,
        rng: random.Random | None = None,
        list_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        if not name:
            raise ValueError("a reflector needs a name (it labels its thread and metrics)")
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period}")
        # The tunables come as one value (validated where it is built).
        tuned = ReflectorOptions.of(options)
        page_size, use_watch_list = tuned.page_size, tuned.use_watch_list
        initial_events_timeout, stall_timeout = tuned.initial_events_timeout, tuned.stall_timeout
        min_watch_timeout, max_watch_timeout = tuned.min_watch_timeout, tuned.max_watch_timeout
        backoff_initial, backoff_max = tuned.backoff_initial, tuned.backoff_max
        on_watch_error = tuned.on_watch_error
        self.name = name
        self._lw = lister_watcher
        self._store = store
        self._clock = clock or REAL_CLOCK
        self._rng = rng or random.Random()
        self.page_size = page_size or None
        self.resync_period = float(resync_period)
        self._should_resync = should_resync
        # A lister-watcher that cannot serve streaming lists says so (client-go's fakes do the same).
        self.use_watch_list = (
            use_watch_list and getattr(lister_watcher, "supports_watch_list", True) is not False
        )
        self.initial_events_timeout = initial_events_timeout
        self.min_watch_timeout = min_watch_timeout
        self.max_watch_timeout = max_watch_timeout
        self.stall_timeout = stall_timeout
        self._on_watch_error = on_watch_error
        # Applied to each listed object as soon as its page is decoded (see the class doc).
        self._list_transform = list_transform
        self._backoff = Backoff(
            initial=backoff_initial, maximum=backoff_max, clock=self._clock, rng=self._rng
        )

        # _lock guards: _state, _stream, _stopping, _running, _stall_timer (and is _cond's lock).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._state: State = WatchListing() if self.use_watch_list else NeedList()
        self._stream: WatchStream | None = None  # the open watch, closed by stop() / a stall
        self._stopping = False  # set once by stop(); the next step goes to Stopped
        self._running = False
        # Invariant: set exactly while _stream is set (and stall_timeout is not None).
        self._stall_timer: SilenceTimer | None = None
        # The run() timers: armed while run() runs.
        self._resync: PeriodicResync | None = None
        if self.resync_period > 0:
            self._resync = PeriodicResync(
                name=name,
                clock=self._clock,
                period=self.resync_period,
                resync=self._resync_store,
                should_resync=should_resync,
                ready=self.has_synced_once,
            )
        self._stop_poll: StopPoll | None = None

        # Written only by the stepping thread.
        self._pending: list = []  # items of the list pages fetched so far
        self._list_rv = ""
        self._last_rv = ""
        self._synced = False
        self._consecutive_failures = 0
        self._watch_list_rejected = False
        self._list_permission_reviewed = False  # see _review_list_permission
        self._gone_streak = 0  # 410s since a watch last delivered something
        self._malformed_streak = 0  # malformed events with no good event in between
        self._last_error = ""  # the last list/watch failure, one line; "" after a success
        resource = getattr(lister_watcher, "resource", None)
        self._resource = resource if hasattr(resource, "group_resource") else None
        namespace = getattr(lister_watcher, "namespace", None)
        self._namespace = namespace if isinstance(namespace, str) and namespace else None

        # Counters: written by the stepping thread (resyncs by the timer), read anywhere.
        self._lists = self._watches = self._events = self._bookmarks = 0
        self._errors = self._restarts = self._relists = self._stalls = 0
        self._last_activity: float | None = None  # clock.now() of the last word from the server

        registry = resolve_registry(metrics_registry)
        if registry is not None:  # False: no metrics (the counters in stats still count)
            collector_for(registry, ReflectorCollector).add(self)

    # -- observation -------------------------------------------------------------------
    @property
    def state(self) -> State:
        with self._lock:
            return self._state

    @property
    def stats(self) -> ReflectorStats:
        return ReflectorStats(
            lists=self._lists,
            watches=self._watches,
            events=self._events,
            bookmarks=self._bookmarks,
            errors=self._errors,
            restarts=self._restarts,
            relists=self._relists,
            stalls=self._stalls,
            resyncs=self._resync.count if self._resync is not None else 0,
        )

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list, event or bookmark ("" before the first list).

        Recorded just before the store gets the change: never behind what a reader of the
        store (or of an informer's cache) can see.
        """
        return self._last_rv

    def has_synced_once(self) -> bool:
        """True once a full list (or the initial events of a streaming list) is handed to the store.

        Set just before the store gets the items, so it is True by the time an informer syncs.
        """
        return self._synced

    def last_activity_age(self) -> float | None:
        """Seconds since the server last sent anything (None before the first answer)."""
        last = self._last_activity
        return None if last is None else max(0.0, self._clock.now() - last)

    def healthy(self) -> bool:
        """False while the reflector is failing repeatedly (several consecutive list/watch failures)."""
        return self._consecutive_failures < _UNHEALTHY_AFTER

    @property
    def last_error(self) -> str:
        """The last list or watch failure as one line ("" once a list or watch succeeded since).

        A 404 says what to check: for a custom resource, whether its
        CustomResourceDefinition is installed.
        """
        return self._last_error

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"<Reflector {self.name!r} state={self.state} rv={self._last_rv!r} lists={s.lists} "
            f"watches={s.watches} events={s.events} errors={s.errors} relists={s.relists}>"
        )

    # -- control -----------------------------------------------------------------------
    def stop(self) -> None:
        """Stop: close the open watch and wake any wait. Returns at once; safe from any thread."""
        with self._cond:
            self._stopping = True
            stream = self._stream
            self._cond.notify_all()
        if stream is not None:
            stream.close()

    def run(self, stop: threading.Event | None = None) -> None:
        """Step until stopped (by :meth:`stop` or by ``stop`` being set), with the timers armed.

        Returns when the reflector is stopped; its timers are cancelled by then
        (see "Timers" in the module doc). Exceptions from the store, and
        :class:`~pyinformers.api.MetadataNotServed`, propagate
        (after the stream is closed).
        """
        with self._lock:
            if self._running:
                raise RuntimeError(f"reflector {self.name!r} is already running")
            if isinstance(self._state, Stopped):
                raise RuntimeError(f"reflector {self.name!r} was stopped; make a new one")
            self._running = True
        self._arm_run_timers(stop)
        try:
            while not isinstance(self.step(stop), Stopped):
                pass
        except Exception:
            if not self._stopping:
                raise
            # The store was closed under us while stopping (an informer shutting down): not an error.
            log.debug("%s: store failed while stopping", self.name, exc_info=True)
        finally:
            with self._lock:
                stream = self._stream
                self._state = Stopped()
            if stream is not None:
                stream.close()
            self._cancel_run_timers()
            with self._lock:
                self._running = False

    # -- timers (see the module doc) ----------------------------------------------------
    def _arm_run_timers(self, stop: threading.Event | None) -> None:
        if self._resync is not None:
            self._resync.start()
        if stop is not None:
            self._stop_poll = StopPoll(stop, self.stop)
            self._stop_poll.start()

    def _cancel_run_timers(self) -> None:
        if self._stop_poll is not None:
            self._stop_poll.cancel()
        if self._resync is not None:
            self._resync.cancel()  # joins a running resync: nothing touches the store once run() returns

    def _arm_stall_timer_locked(self, stream: WatchStream) -> None:
        """Arm the stall timer of the watch just published (``_lock`` held)."""
        if self.stall_timeout is not None:
            self._stall_timer = SilenceTimer(
                self._clock,
                self.stall_timeout,
                stream,
                self._read_last_activity,
                on_silence=self._log_stall,
            )
            self._stall_timer.start()

    def _resync_store(self) -> None:
        self._store.resync()  # looked up at each period, as before the timers had a module of their own

    def _read_last_activity(self) -> float | None:
        return self._last_activity

    def _log_stall(self) -> None:
        log.warning("%s: watch silent for %.0fs: restarting it", self.name, self.stall_timeout)

    def _cancel_stall_timer_locked(self) -> None:
        timer, self._stall_timer = self._stall_timer, None
        if timer is not None:
            timer.cancel()

    # -- the state machine ------------------------------------------------------------
    def step(self, stop: threading.Event | None = None) -> State:
        """Advance one transition and return the new state (see the module doc)."""
        with self._lock:
            state = self._state
            if self._stopping or (stop is not None and stop.is_set()):
                self._state = Stopped()
                return self._state
        if isinstance(state, Stopped):
            return state
        if isinstance(state, Watching):
            new = self._watch(state.resource_version, initial=None)
        elif isinstance(state, Listing):
            new = self._list_page(state)
        elif isinstance(state, NeedList):
            self._pending = []
            new = Listing(
                None, paged=state.paged, resource_version=None if state.consistent else "0"
            )
        elif isinstance(state, WatchListing):
            if not self._list_permission_reviewed:
                self._review_list_permission()
            new = (
                self._watch(None, initial=InitialEvents())
                if not self._watch_list_rejected
                else NeedList()
            )
        elif isinstance(state, BackingOff):
            new = state.then if self._wait_until(state.until, stop) else Stopped()
        else:  # pragma: no cover - exhaustive
            raise AssertionError(f"unknown state {state!r}")
        with self._lock:
            if self._stopping or isinstance(new, Stopped):
                new = Stopped()
            self._state = new
        return new

    def _wait_until(self, until: float, stop: threading.Event | None) -> bool:
        """Wait on the clock until ``until``; False if stopped first."""
        with self._cond:
            while True:
                if self._stopping or (stop is not None and stop.is_set()):
                    return False
                remaining = until - self._clock.now()
                if remaining <= 0:
                    return True
                self._clock.wait(self._cond, remaining)

    def _fail(self, error: BaseException, then: State, what: str) -> State:
        """Count a failure, tell the callback, and back off before ``then``."""
        self._errors += 1
        self._consecutive_failures += 1
        delay = self._backoff.next()
        if isinstance(error, TooManyRequests) and error.retry_after is not None:
            delay = max(delay, error.retry_after)
        level = logging.INFO if self._consecutive_failures < _UNHEALTHY_AFTER else logging.WARNING
        verb = "list" if what.startswith("list") else "watch"
        advice = hint(error, self._resource, verb=verb, namespace=self._namespace)
        reason = f"{what} failed ({describe_error(error)}){advice}"
        self._last_error = reason
        log.log(
            level,
            "%s: %s failed (%s)%s; retrying in %.2fs",
            self.name,
            what,
            describe_error(error),
            advice,
            delay,
        )
        self._notify_error(error)
        return BackingOff(self._clock.now() + delay, then, delay, reason)

    def _review_list_permission(self) -> None:
        """Before the first streaming list: ask once whether a list would be allowed.

        A streaming list is authorized as a watch, so a missing ``list`` would
        only show at the first fallback to a list (see
        :mod:`pyinformers.cache.reflector._watchlist`). One review per
        reflector: relists and resyncs ask nothing. A missing permission is
        logged as an error and handed to ``on_watch_error`` (a Manager then
        refuses to start, naming it); the sync goes on.
        """
        self._list_permission_reviewed = True
        missing = review_list_permission(self._lw)
        if missing is None:
            return
        self._errors += 1
        log.error("%s: %s", self.name, missing.message)
        self._notify_error(missing)

    def _notify_error(self, error: BaseException) -> None:
        if self._on_watch_error is None:
            return
        try:
            self._on_watch_error(error)
        except Exception:  # a broken callback must not break the reflector
            log.exception("%s: on_watch_error callback failed", self.name)

    def _succeeded(self) -> None:
        self._consecutive_failures = 0
        self._last_error = ""
        self._backoff.reset()

    # -- list --------------------------------------------------------------------------
    def _list_page(self, state: Listing) -> State:
        try:
            with gc_paused():
                page = self._lw.list(
                    limit=self.page_size if state.paged else None,
                    continue_=state.continue_,
                    # The first page only: later ones carry their snapshot in the continue token.
                    resource_version=None if state.continue_ else state.resource_version,
                )
        except Gone as error:
            if state.continue_:
                # The snapshot the pages came from is gone: start over with one full list.
                self._relists += 1
                self._errors += 1
                self._notify_error(error)
                log.info("%s: list continue token expired; relisting without paging", self.name)
                self._pending = []
                return Listing(None, paged=False)  # a consistent read
            return self._fail(error, NeedList(paged=state.paged, consistent=True), "list")
        except MetadataNotServed:
            raise  # no retry can fix it: the informer fails with this one line
        except Exception as error:  # ApiError or network: retry this same page after a backoff
            return self._fail(error, state, "list")
        self._last_activity = self._clock.now()
        if self._list_transform is None:
            self._pending.extend(page.items)
        else:  # per page: what the transform drops is freed before the next page is decoded
            self._pending.extend([self._transform_listed(obj) for obj in page.items])
        if page.continue_:
            return Listing(
                page.continue_, paged=state.paged, resource_version=state.resource_version
            )
        items, self._pending = self._pending, []
        rv = page.resource_version
        self._record_list(rv)
        with gc_paused():
            self._store.replace(items, rv)
        del items
        self._succeeded()
        return Watching(rv)

    def _record_list(self, rv: str) -> None:
        """Count a complete list at ``rv``: done *before* the store gets its items.

        Whoever sees the items in the store (an informer whose ``wait_for_cache_sync``
        returned) then finds :meth:`last_sync_resource_version`, :meth:`has_synced_once`
        and ``stats.lists`` already saying so. A store that raises ends :meth:`run`,
        so nothing resumes from a version the store did not take.
        """
        self._lists += 1
        self._list_rv = self._last_rv = rv
        self._synced = True

    # -- watch -------------------------------------------------------------------------
    def _watch(self, resource_version: str | None, *, initial: InitialEvents | None) -> State:
        """Open one watch and consume it; ``initial`` holds a streaming list's initial events."""
        retry: State = Watching(resource_version or "") if initial is None else WatchListing()
        timeout = self._rng.randint(int(self.min_watch_timeout), int(self.max_watch_timeout))
        try:
            stream = self._lw.watch(
                resource_version=resource_version or None,
                allow_bookmarks=True,
                timeout_seconds=timeout,
                send_initial_events=initial is not None,
            )
        except Gone as error:
            if (
                initial is not None
            ):  # a 410 to a request with no resourceVersion: not a streaming server
                return self._streaming_list_failed(
                    f"the server answered 410 ({describe_error(error)})"
                )
            return self._relist(error)
        except ApiError as error:
            if initial is not None and rejects_watch_list(error):
                return self._reject_watch_list(error)
            return self._fail(error, retry, "watch")
        except MetadataNotServed:
            raise  # no retry can fix it: the informer fails with this one line
        except Exception as error:
            return self._fail(error, retry, "watch")
        started = self._clock.now()
        with self._lock:
            stopped = self._stopping
            if not stopped:
                self._last_activity = (
                    started  # before publishing the stream: the stall timer reads both
                )
                self._stream = stream
                self._arm_stall_timer_locked(stream)
                if initial is not None:
                    initial.watch(
                        stream, self._clock, self.initial_events_timeout, self._read_last_activity
                    )
        if stopped:
            stream.close()
            return Stopped()
        self._watches += 1
        if initial is not None:
            # Objects arrive one per event, each decoded while the collection grows: keep the
            # cyclic collector off it until the initial events are in the store (see gc_policy).
            initial.pause_gc(gc_paused())
        try:
            return self._consume(stream, resource_version or "", initial, started)
        finally:
            with self._lock:
                self._stream = None
                self._cancel_stall_timer_locked()
            if initial is not None:
                initial.close()
            stream.close()

    # -- streaming lists ---------------------------------------------------------------
    def _finish_streaming_list(self, initial: InitialEvents | None, rv: str) -> None:
        """The initial-events-end bookmark: hand the collected objects to the store at ``rv``."""
        assert initial is not None
        with self._lock:
            if not self._stopping:
                self._state = Watching(rv)  # the same stream goes on as a watch from rv
        items = initial.take()
        self._record_list(rv)
        with gc_paused():
            self._store.replace(items, rv)
        del items
        initial.end_gc_pause()
        self._succeeded()

    def _streaming_list_failed(self, reason: str) -> State:
        """The server did not end a streaming list's initial events: list this time.

        Only this sync lists: a relist after 410 streams again (as client-go
        falls back for one round only), so a misjudged server costs one list,
        never a process's memory for good; relists are rare. The objects
        collected so far are dropped: the cache never takes a partial initial
        state, and is not marked synced before the list.
        """
        self._errors += 1
        self._notify_error(StreamingListUnsupported(reason))
        log.warning(
            "%s: streaming list: %s; listing instead this time (a lister-watcher that cannot stream says "
            "so with supports_watch_list = False)",
            self.name,
            reason,
        )
        return NeedList()

    def _consume(
        self, stream: WatchStream, rv: str, initial: InitialEvents | None, started: float
    ) -> State:
        store = self._store
        collected = initial.objects if initial is not None else None
        now = self._clock.now
        iterator = iter(stream)
        received = 0  # events of this stream, bookmarks included
        while True:
            try:
                event = next(iterator)
            except StopIteration:
                break
            except Gone as error:
                return self._relist(error)
            except MetadataNotServed:
                raise  # no retry can fix it: the informer fails with this one line
            except Exception as error:  # an ERROR event, a broken connection, a garbled line
                if self._stopping:
                    return Stopped()
                if (
                    initial is not None
                    and isinstance(error, ApiError)
                    and rejects_watch_list(error)
                ):
                    return self._reject_watch_list(error)
                if received:
                    self._succeeded()  # it made progress: this failure starts a fresh backoff sequence
                self._restarts += 1
                then: State = WatchListing() if initial is not None else Watching(rv)
                return self._fail(error, then, "watch")
            self._last_activity = now()
            if not received:
                self._gone_streak = 0
                # The server answers: whatever failed before is over (the backoff is reset
                # only once this stream ends well, so a flapping server is still paced).
                self._consecutive_failures = 0
                self._last_error = ""
            received += 1
            etype = event.type
            obj = event.object
            try:
                md = obj["metadata"]
                new_rv = md.get("resourceVersion")
                named = bool(md.get("name"))
            except (KeyError, TypeError, AttributeError):
                new_rv = None
                named = False
            if not named and etype in _OBJECT_EVENTS:
                # An object the store could not key: the stream is not to be trusted from here.
                return self._malformed(etype, obj, rv, initial, progressed=received > 1)
            if collected is not None:
                # The initial events of a streaming list: collect (transformed as decoded, so
                # what the transform drops is freed at once), then replace all at once. Changes
                # made after the list's snapshot may come before the end bookmark: apply them.
                if new_rv:
                    rv = new_rv
                if etype in (_ADDED, _MODIFIED):
                    collected[_object_key(obj)] = (
                        obj if self._list_transform is None else self._transform_listed(obj)
                    )
                elif etype == _DELETED:
                    collected.pop(_object_key(obj), None)
                elif etype == _BOOKMARK:
                    self._bookmarks += 1
                    if not ends_initial_events(obj):
                        # A server that streams lists sends the end bookmark before any other.
                        return self._streaming_list_failed(
                            "a bookmark came before the initial-events-end bookmark (the server ignores "
                            "sendInitialEvents)"
                        )
                    self._finish_streaming_list(initial, rv)
                    initial = collected = None
                continue
            if etype in _OBJECT_EVENTS:
                # Recorded before the store gets the change, as a list is (see _record_list).
                if new_rv:
                    rv = self._last_rv = new_rv
                self._events += 1
                self._malformed_streak = 0
                if etype == _MODIFIED:
                    store.update(obj)
                elif etype == _ADDED:
                    store.add(obj)
                else:
                    store.delete(obj)
            elif etype == _BOOKMARK:
                if new_rv:
                    rv = self._last_rv = new_rv
                self._bookmarks += 1
            else:
                log.warning("%s: ignoring a watch event of unknown type %r", self.name, etype)
        # The stream ended without an error.
        with self._lock:
            stall_timer = self._stall_timer
        stalled = stall_timer is not None and stall_timer.fired
        if self._stopping:
            return Stopped()
        if initial is not None:
            if initial.silent:
                return self._streaming_list_failed(
                    f"no initial-events-end bookmark after {self.initial_events_timeout:g}s of silence"
                )
            return self._streaming_list_failed(
                "the watch ended before the initial-events-end bookmark"
            )
        if stalled:
            self._stalls += 1
            self._restarts += 1
            return self._fail(
                TimeoutError(f"no event for {self.stall_timeout}s"), Watching(rv), "watch"
            )
        self._restarts += 1
        if received == 0 and self._clock.now() - started < _SHORT_WATCH:
            return self._fail(
                ConnectionError("watch closed at once with no event"), Watching(rv), "watch"
            )
        self._succeeded()
        return Watching(rv)

    def _malformed(
        self, etype: str, obj: Any, rv: str, initial: InitialEvents | None, *, progressed: bool
    ) -> State:
        """A watch event whose object has no ``metadata.name``: handled like a broken stream.

        The watch is re-opened from the last good resourceVersion after a
        backoff. If the re-opened watch starts with a malformed event again
        (the server replays the same history), the reflector relists instead:
        a list does not replay history, and the FIFO skips (and counts) an
        unkeyable object in a list without failing the rest.
        """
        self._malformed_streak += 1
        self._restarts += 1
        if progressed:
            self._succeeded()  # the stream made progress first: start a fresh backoff sequence
        error = MalformedEvent(
            f"a {etype} event carries {describe(obj)}, which has no metadata.name"
        )
        if initial is not None:
            return self._fail(error, WatchListing(), "streaming list")
        if self._malformed_streak >= 2:
            self._relists += 1
            self._malformed_streak = 0
            return self._fail(
                error, NeedList(consistent=True), "watch (a malformed event again; relisting)"
            )
        return self._fail(error, Watching(rv), "watch")

    def _transform_listed(self, obj: Any) -> Any:
        try:
            return self._list_transform(obj)  # type: ignore[misc]
        except Exception:  # kept as decoded: the store transforms it again and reports the failure
            return obj

    def _relist(self, error: ApiError) -> State:
        """410: the resourceVersion left the server's history; the cache must be rebuilt from a list.

        The first relist is immediate. If the watch after it is gone again before
        it delivered anything, the next relist waits a backoff: a full list is
        expensive, and a server in that state must not be hammered with them.
        """
        self._relists += 1
        self._gone_streak += 1
        then: State = (
            WatchListing()
            if self.use_watch_list and not self._watch_list_rejected
            else NeedList(consistent=True)
        )
        if self._gone_streak > 1:
            return self._fail(error, then, "watch (410 again right after a relist)")
        self._errors += 1
        self._notify_error(error)
        log.info(
            "%s: resourceVersion %s is too old (%s); relisting",
            self.name,
            self._last_rv,
            describe_error(error),
        )
        return then

    def _reject_watch_list(self, error: ApiError) -> State:
        """A streaming list refused: a server without them lists from now on; 403/404 list this time.

        A 403 or 404 says nothing about streaming lists (a missing CRD, a
        missing permission): the list that follows, and the watch after it,
        report it with their hints (and to ``on_watch_error``, which therefore
        does not hear of this first refusal).
        """
        if not refuses_for_good(error):
            log.info(
                "%s: streaming list refused (%s); listing this time",
                self.name,
                describe_error(error),
            )
            return NeedList()
        self._watch_list_rejected = True
        self._notify_error(error)
        log.info(
            "%s: the server refuses streaming lists (%s); listing from now on",
            self.name,
            describe_error(error),
        )
        return NeedList()
