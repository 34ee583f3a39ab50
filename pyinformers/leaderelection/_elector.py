"""``LeaderElector``: at most one leader among candidates sharing one Lease, on an injected clock.

Semantics follow client-go's ``tools/leaderelection``; the code is a steppable
state machine like the reflector's (:meth:`LeaderElector.step` makes one
attempt and says when the next is due; :meth:`LeaderElector.run` is a thin
loop around it)::

    Following ──try: lease free, expired, or ours ──CAS write ok──► Leading(valid_until)
        ▲  │ lease held by another and observed unchanged for less than its duration: wait
        │  └─ every retry_period × (1 + jitter × U[0,1))
        │
    Leading ──renew (PUT on the last known version; on failure GET then PUT) every retry_period──►
        │   ok, answered before valid_until:  valid_until = send time + renew_deadline
        │   failed: retry every retry_period
        └── clock reaches valid_until, or the Lease names someone else ──► Stopped
                (on_stopped_leading; run() ends, as client-go's Run does)
    stop(): if leading, on_stopped_leading, then (release_on_cancel) write holderIdentity ""

Why at most one leader (the argument the tests check):

* A follower measures a holder's lease from the moment *it observed* the
  current record (its own clock, after the read returned), never from
  ``renewTime``; the write it observed was applied before that moment.
* The leader counts its leadership from the moment it *sent* its last
  successful write (before the server applied it), and only for
  ``renew_deadline`` < ``lease_duration``. A renewal answered after its
  leadership already ended does not revive it.
* So a leader stops at least ``lease_duration - renew_deadline`` before any
  follower may consider the lease expired; that margin absorbs clock *rate*
  differences and the step thread's scheduling delay. The takeover itself is
  a compare-and-swap on the resourceVersion: of two candidates that saw the
  same expired record, one gets 409 Conflict.
* :meth:`is_leader` is computed from the clock, so a caller asking it between
  steps (a worker about to reconcile) never acts on a leadership that ended
  while the stepping thread was blocked.

Like client-go this is not fencing: work already running when leadership ends
keeps running. Keep each unit of work shorter than ``lease_duration -
renew_deadline``, or stop the process on :func:`on_stopped_leading` (the
Manager's default).

Callbacks run on the stepping thread: ``on_started_leading()`` and
``on_new_leader(identity)`` must return quickly (start work on a thread of
your own); ``on_stopped_leading()`` may block to drain work, which is what
makes ``release_on_cancel`` safe. Exceptions in callbacks are logged.

Thread-safety: :meth:`step` and :meth:`stop` are serialised by a lock;
:meth:`is_leader`, :attr:`leader`, :meth:`check` may be called from any thread.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pyinformers.api._errors import ApiError, Conflict, NotFound
from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.leaderelection._lock import ResourceLock
from pyinformers.leaderelection._record import LeaderElectionRecord
from pyinformers.leaderelection._steps import StepRunner

__all__ = ["ElectionTiming", "ElectorState", "LeaderElector", "JITTER_FACTOR"]

log = logging.getLogger("pyinformers.leaderelection")

#: client-go's jitter: a follower retries after ``retry_period * (1 + JITTER_FACTOR * U[0,1))``.
JITTER_FACTOR = 1.2


@dataclass(frozen=True)
class ElectionTiming:
    """The three durations of an election (seconds), validated as client-go does.

    ``lease_duration`` (15): how long followers wait, from the last change
    they observed, before taking a lease over; what a failover costs when the
    leader dies without releasing. ``renew_deadline`` (10): how long a leader
    keeps leading without a successful renewal. ``retry_period`` (2): the
    pause between attempts, which is also the API write rate of a leader
    (one renewal per period) and the failover time after a release.
    Required: ``lease_duration > renew_deadline > jitter * retry_period > 0``.
    """

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    jitter: float = JITTER_FACTOR

    def __post_init__(self) -> None:
        if self.retry_period <= 0 or self.jitter < 0:
            raise ValueError("retry_period must be > 0 and jitter >= 0")
        if not self.lease_duration > self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}) must be greater than renew_deadline ({self.renew_deadline})"
            )
        if not self.renew_deadline > self.jitter * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}) must be greater than retry_period × jitter "
                f"({self.retry_period} × {self.jitter})"
            )


class ElectorState(enum.Enum):
    FOLLOWING = "following"
    LEADING = "leading"
    STOPPED = "stopped"


_Callback = Callable[..., Any] | None


class LeaderElector:
    """Campaign for ``lock``; lead until the lease is lost or :meth:`stop` is called. Runs once."""

    def __init__(
        self,
        lock: ResourceLock,
        *,
        timing: ElectionTiming | None = None,
        on_started_leading: _Callback = None,
        on_stopped_leading: _Callback = None,
        on_new_leader: _Callback = None,
        release_on_cancel: bool = False,
        clock: Clock | None = None,
        name: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not isinstance(lock, ResourceLock):
            raise TypeError(f"lock must be a ResourceLock (LeaseLock), got {lock!r}")
        self.lock = lock
        self.timing = timing or ElectionTiming()
        self.clock: Clock = clock or REAL_CLOCK
        self.name = name or lock.describe()
        self.release_on_cancel = release_on_cancel
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._rng = rng or random.Random()
        self._duration_s = LeaderElectionRecord.duration_seconds(self.timing.lease_duration)
        self._step_lock = threading.RLock()  # one step() or stop() at a time
        self._lock = threading.Lock()  # guards the fields below for readers on other threads
        self._state = ElectorState.FOLLOWING
        self._valid_until: float | None = None  # while LEADING: when leadership ends unless renewed
        self._renewed_at: float | None = None  # send time of the last successful write as leader
        # The last record read or written, its resourceVersion, and when it last *changed* (our clock).
        self._observed: LeaderElectionRecord | None = None
        self._observed_rv: str | None = None
        self._observed_at: float = 0.0
        self._reported_leader: str | None = None
        self._runner = StepRunner(
            self.step,
            self.clock,
            thread_name=f"pyinformers-leaderelection-{self.name}",
            on_crash=self._crashed,
        )
        #: Counters for tests and metrics: attempts, writes, failed attempts, transitions led.
        self.attempts = 0
        self.writes = 0
        self.failures = 0
        self.terms = 0

    # -- reading ------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self.lock.identity

    @property
    def state(self) -> ElectorState:
        with self._lock:
            return self._state

    @property
    def leader(self) -> str:
        """The holder of the last record observed ("" when none or released)."""
        with self._lock:
            return self._observed.holder if self._observed else ""

    @property
    def valid_until(self) -> float | None:
        """While leading: the clock time at which leadership ends unless renewed first."""
        with self._lock:
            return self._valid_until if self._state is ElectorState.LEADING else None

    def is_leader(self) -> bool:
        """True while we lead *now*: the last renewal is younger than ``renew_deadline``."""
        with self._lock:
            if self._state is not ElectorState.LEADING or self._valid_until is None:
                return False
            valid_until = self._valid_until
        return self.clock.now() < valid_until

    def check(self, tolerance: float = 20.0) -> bool:
        """Health: False when we believe we lead but have not renewed for ``lease_duration + tolerance``.

        That happens only when the stepping thread is stuck (a deadlock, a
        callback that never returns): the process should be restarted.
        """
        with self._lock:
            if self._state is not ElectorState.LEADING or self._renewed_at is None:
                return True
            renewed_at = self._renewed_at
        return self.clock.now() - renewed_at <= self.timing.lease_duration + tolerance

    # -- the state machine ----------------------------------------------------------------
    def step(self) -> float | None:
        """Make one attempt (acquire, or renew while leading); return seconds until the next is due.

        Returns None once stopped. Called by :meth:`run`'s thread, or by tests
        driving the elector by hand on a fake clock.
        """
        with self._step_lock:
            if self._state is ElectorState.STOPPED:
                return None
            if self._state is ElectorState.LEADING and self.clock.now() >= self._valid_until:  # type: ignore[operator]
                self._stop_leading("failed to renew within the renew deadline")
                return None
            self.attempts += 1
            sent = self.clock.now()
            succeeded = self._try_acquire_or_renew(sent)
            self._report_new_leader()
            now = self.clock.now()
            if succeeded:
                self._succeeded(sent, now)
            else:
                self.failures += 1
                with self._lock:
                    leading = self._state is ElectorState.LEADING
                    valid_until = self._valid_until
                    taken = self._observed is not None and self._observed.holder != self.identity
                if leading and (taken or now >= valid_until):  # type: ignore[operator]
                    self._stop_leading(
                        "the lease was taken by another"
                        if taken
                        else "failed to renew within the renew deadline"
                    )
                    return None
            return self._next_delay(now)

    def _succeeded(self, sent: float, now: float) -> None:
        with self._lock:
            state, valid_until = self._state, self._valid_until
        if state is ElectorState.LEADING:
            if now >= valid_until:  # type: ignore[operator]
                # Answered after our leadership ended: a follower may already count our
                # lease as expired. Do not revive it.
                self._stop_leading("the renewal was answered after the renew deadline")
                return
            with self._lock:
                self._valid_until = sent + self.timing.renew_deadline
                self._renewed_at = sent
            return
        if now >= sent + self.timing.renew_deadline:
            return  # acquired too slowly to lead safely; the next attempt renews it as ours
        with self._lock:
            self._state = ElectorState.LEADING
            self._valid_until = sent + self.timing.renew_deadline
            self._renewed_at = sent
        self.terms += 1
        log.info("%s: %s became the leader of %s", self.name, self.identity, self.lock.describe())
        self._call(self._on_started)

    def _next_delay(self, now: float) -> float:
        retry = self.timing.retry_period
        with self._lock:
            leading = self._state is ElectorState.LEADING
            valid_until = self._valid_until
        if leading:
            return max(0.0, min(retry, valid_until - now))  # type: ignore[operator]
        return retry * (1.0 + self.timing.jitter * self._rng.random())

    def _try_acquire_or_renew(self, sent: float) -> bool:
        wall = self.clock.time()
        with self._lock:
            leading = self._state is ElectorState.LEADING
            valid_until = self._valid_until
            observed, observed_rv = self._observed, self._observed_rv
        timeout = (valid_until - sent) if leading else self.timing.renew_deadline  # type: ignore[operator]
        fresh = LeaderElectionRecord(
            holder=self.identity,
            lease_duration=self._duration_s,
            acquire_time=wall,
            renew_time=wall,
        )
        if leading and observed is not None and observed_rv is not None:
            # Fast path: renew on the version we last wrote, without reading first.
            renewal = replace(
                fresh, acquire_time=observed.acquire_time, transitions=observed.transitions
            )
            if self._write(renewal, observed_rv, timeout):
                return True
            timeout = max(0.001, timeout - (self.clock.now() - sent))
        try:
            record, rv = self.lock.get(timeout=timeout)
        except NotFound:
            try:
                rv = self.lock.create(fresh, timeout=timeout)
            except Exception as err:  # AlreadyExists: another candidate created it first
                log.debug("%s: creating %s failed: %s", self.name, self.lock.describe(), err)
                return False
            self.writes += 1
            self._observe(fresh, rv)
            return True
        except Exception as err:
            log.info("%s: reading %s failed: %s", self.name, self.lock.describe(), _brief(err))
            return False
        self._observe(record, rv)
        now = self.clock.now()
        with self._lock:
            observed_at = self._observed_at
        if (
            record.holder
            and record.holder != self.identity
            and observed_at + record.lease_duration > now
        ):
            return False  # held by another and not expired by our own observation
        if record.holder == self.identity:
            candidate = replace(
                fresh, acquire_time=record.acquire_time, transitions=record.transitions
            )
        else:
            candidate = replace(fresh, transitions=record.transitions + 1)
        return self._write(candidate, rv, timeout)

    def _write(self, record: LeaderElectionRecord, rv: str, timeout: float) -> bool:
        try:
            new_rv = self.lock.update(record, rv, timeout=max(0.001, timeout))
        except Conflict:
            log.debug("%s: %s changed under us (409 Conflict)", self.name, self.lock.describe())
            return False
        except Exception as err:
            log.info("%s: writing %s failed: %s", self.name, self.lock.describe(), _brief(err))
            return False
        self.writes += 1
        self._observe(record, new_rv)
        return True

    def _observe(self, record: LeaderElectionRecord, rv: str) -> None:
        now = self.clock.now()
        with self._lock:
            if record != self._observed:
                self._observed = record
                self._observed_at = now
            self._observed_rv = rv

    def _report_new_leader(self) -> None:
        with self._lock:
            holder = self._observed.holder if self._observed else ""
            if not holder or holder == self._reported_leader:
                return
            self._reported_leader = holder
        log.info("%s: the leader is %s", self.name, holder)
        self._call(self._on_new_leader, holder)

    def _stop_leading(self, why: str) -> None:
        with self._lock:
            was_leading = self._state is ElectorState.LEADING
            self._state = ElectorState.STOPPED
            self._valid_until = None
        if was_leading:
            log.warning(
                "%s: %s stopped leading %s: %s", self.name, self.identity, self.lock.describe(), why
            )
            self._call(self._on_stopped)

    def _call(self, callback: _Callback, *args: Any) -> None:
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:
            log.exception("%s: leader election callback %r failed", self.name, callback)

    def release(self) -> bool:
        """Empty the holder (``leaseDurationSeconds`` 1) if the Lease still names us; True if it did.

        Called by :meth:`stop` with ``release_on_cancel``, after
        ``on_stopped_leading`` returned. The write is a compare-and-swap on
        the last version we wrote, so it can only release a lease nobody else
        took since.
        """
        with self._lock:
            observed, rv = self._observed, self._observed_rv
        if observed is None or rv is None or observed.holder != self.identity:
            return False
        wall = self.clock.time()
        released = LeaderElectionRecord(
            holder="",
            lease_duration=1,
            acquire_time=wall,
            renew_time=wall,
            transitions=observed.transitions,
        )
        if self._write(released, rv, self.timing.renew_deadline):
            log.info("%s: released %s", self.name, self.lock.describe())
            return True
        return False

    # -- running --------------------------------------------------------------------------
    def run(self) -> None:
        """Step until leadership is lost or :meth:`stop` is called (blocking)."""
        self._runner.run()

    def _crashed(self) -> None:
        self.stop()

    def start(self) -> threading.Thread:
        """Run in a daemon thread ``pyinformers-leaderelection-<name>``; returns it."""
        return self._runner.start()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop campaigning; if leading, call ``on_stopped_leading`` then (``release_on_cancel``) release.

        Waits for an attempt in progress (bounded by its request timeout).
        Returns True when the run thread (if any) ended within ``timeout``
        real seconds. Idempotent; callable from any thread but the callbacks'.
        """
        self._runner.halt()
        with self._step_lock:
            with self._lock:
                was_leading = self._state is ElectorState.LEADING
            self._stop_leading("stopped")
            if was_leading and self.release_on_cancel:
                self.release()
        return self._runner.join(timeout)

    def __repr__(self) -> str:
        with self._lock:
            state = self._state.value
            holder = self._observed.holder if self._observed else ""
        return f"<LeaderElector {self.lock.describe()} identity={self.identity!r} {state} leader={holder!r}>"


def _brief(err: BaseException) -> str:
    if isinstance(err, ApiError):
        return f"{type(err).__name__} {getattr(err, 'code', '')}".strip()
    return f"{type(err).__name__}: {err}"
