"""``ShardCoordinator``: split a controller's keys over live replicas, never two at once on one key.

The protocol (docs/ha.rst has it with the full safety argument):

* **Membership.** Each replica holds a member Lease
  ``<group>-member-<hash of identity>`` through a :class:`LeaderElector` of its
  own (nobody else competes for it). While that elector leads, the replica is
  *valid*; when it cannot renew within the renew deadline it stops for good
  (a new process joins with a new identity).
* **Shards.** Keys hash to ``shards`` fixed shards; shard ``i`` has a Lease
  ``<group>-shard-<i>`` whose ``holderIdentity`` names its owner, written
  only by compare-and-swap on the resourceVersion, and only on a handover (no
  renewals: an owner's claim lives exactly as long as its membership).
* **Desire.** Every replica sees the member Leases (a Lease informer, or a
  list) and counts as live those whose record changed within their lease
  duration by its own clock. Balanced rendezvous hashing
  (:func:`~.rendezvous.assign`) over the live members says which shards each
  *should* own. Views may disagree for a while; desire decides nothing about
  safety, only where shards go.
* **Handover.** A replica gives up a shard it should not own by first
  refusing new reconciles of its keys, waiting until its in-flight reconciles
  of that shard finished, then writing ``holderIdentity: ""``. A replica takes
  a shard it should own only when its Lease is free (``""``), already names
  it, or names a member that is provably gone: a fresh read of that member's
  Lease returns a version that has not changed for the lease duration by our
  clock (or a released member Lease).
* **Work.** A worker may reconcile key *k* only while the replica is valid
  *and* holds shard(k) (its own CAS succeeded) *and* is not draining it
  (:meth:`enter` / :meth:`exit` count reconciles in flight per shard).

Why no key is ever reconciled by two replicas at once: the shard Lease
changes hands only by CAS, and a CAS naming B can only follow A's own release
(written after A drained and stopped admitting that shard) or A's proven
absence (A's member Lease unchanged for ``lease_duration`` by B's clock,
which by the elector's argument means A's validity ended at least
``lease_duration - renew_deadline`` earlier, and an invalid replica admits
nothing and never becomes valid again). The residual assumption, as for any
Lease-based scheme without fencing: a reconcile already running when its
replica's validity ends finishes within ``lease_duration - renew_deadline``.

Threads: :meth:`step` runs on one thread (the coordinator's run loop or a
test); :meth:`enter`, :meth:`exit`, :meth:`owns` from worker and handler
threads; they share a lock that is never held across a network call.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections.abc import Callable, Iterable
from typing import Any

from pyinformers.api._client import ResourceClient
from pyinformers.api._errors import Conflict, NotFound
from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.leaderelection._elector import ElectionTiming, ElectorState, LeaderElector
from pyinformers.leaderelection._lock import LeaseLock
from pyinformers.leaderelection._record import LeaderElectionRecord
from pyinformers.leaderelection._rendezvous import assign, shard_of
from pyinformers.leaderelection._steps import StepRunner
from pyinformers.resources import LEASES

__all__ = [
    "GROUP_LABEL",
    "ROLE_LABEL",
    "SHARDS_LABEL",
    "ShardCoordinator",
    "member_lease_name",
    "shard_lease_name",
]

log = logging.getLogger("pyinformers.leaderelection._shards")

#: The share of the renew deadline one step may spend on shard Lease writes.
_STEP_BUDGET = 1 / 3

#: Label on every Lease of a shard group (its value: the group's name).
GROUP_LABEL = "sharding.pyinformers.io/group"
#: Label saying what a Lease of the group is: ``member`` or ``shard``.
ROLE_LABEL = "sharding.pyinformers.io/role"
#: Label on member Leases: the shard count that member hashes keys with.
SHARDS_LABEL = "sharding.pyinformers.io/shards"


def member_lease_name(group: str, identity: str) -> str:
    """The member Lease of ``identity`` (identities need not be valid object names: they are hashed)."""
    return f"{group}-member-{hashlib.blake2b(identity.encode(), digest_size=6).hexdigest()}"


def shard_lease_name(group: str, shard: int) -> str:
    return f"{group}-shard-{shard}"


class _Seen:
    """A Lease version and when this replica first saw it (its clock)."""

    __slots__ = ("rv", "record", "since")

    def __init__(self, rv: str | None, record: LeaderElectionRecord | None, since: float) -> None:
        self.rv = rv
        self.record = record
        self.since = since


class ShardCoordinator:
    """One replica's side of the sharding protocol (see the module docstring)."""

    #: Member Leases unchanged for this many lease durations, and named by no shard, are deleted.
    GC_AFTER = 4

    def __init__(
        self,
        api_client: Any,
        *,
        group: str,
        namespace: str,
        identity: str,
        shards: int = 24,
        timing: ElectionTiming | None = None,
        clock: Clock | None = None,
        view: Callable[[], Iterable[dict]] | None = None,
        on_gained: Callable[[set], Any] | None = None,
        on_lost: Callable[[], None] | None = None,
        on_released: Callable[[set], Any] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards!r}")
        self.api_client = api_client
        self.group = group
        self.namespace = namespace
        self.identity = identity
        self.shards = int(shards)
        self.timing = timing or ElectionTiming()
        self.clock: Clock = clock or REAL_CLOCK
        self._labels = {GROUP_LABEL: group}
        self._view = view or self._list_view
        self._on_gained = on_gained
        self._on_lost = on_lost
        self._on_released = on_released
        self._rng = rng or random.Random()
        self.member = LeaderElector(
            LeaseLock(
                api_client,
                member_lease_name(group, identity),
                namespace,
                identity,
                labels={**self._labels, ROLE_LABEL: "member", SHARDS_LABEL: str(self.shards)},
            ),
            timing=self.timing,
            clock=self.clock,
            name=f"shard-member-{group}",
            rng=self._rng,
        )
        self._shard_locks = {
            s: LeaseLock(
                api_client,
                shard_lease_name(group, s),
                namespace,
                identity,
                labels={**self._labels, ROLE_LABEL: "shard"},
            )
            for s in range(self.shards)
        }
        self._lock = threading.Lock()
        # Guarded by _lock: shards this replica holds (its CAS succeeded), those it is giving up,
        # and reconciles in flight per shard. Invariant: a shard in _draining is in _held.
        self._held: set[int] = set()
        self._draining: set[int] = set()
        self._inflight: dict[int, int] = {}
        self._stopped = False
        # Step thread only: versions of member Leases and when we first saw each.
        self._seen: dict[str, _Seen] = {}
        self.live: list[str] = []  # the live members at the last step (for logs, tests, metrics)
        self.mismatched: list[str] = []  # live members hashing with another shard count
        self.handovers = 0  # shards acquired by this replica
        self._runner = StepRunner(
            self.step,
            self.clock,
            thread_name=f"pyinformers-sharding-{group}",
            on_crash=lambda: self._lose_everything("the coordinator failed"),
        )

    # -- what workers and handlers ask ----------------------------------------------------
    def shard_of(self, key: str) -> int:
        return shard_of(key, self.shards)

    def owns(self, key: str) -> bool:
        """Whether this replica currently holds (and is not giving up) the shard of ``key``."""
        shard = shard_of(key, self.shards)
        with self._lock:
            return shard in self._held and shard not in self._draining

    def enter(self, key: str) -> bool:
        """Admit a reconcile of ``key`` now (then :meth:`exit` must follow), or refuse it."""
        shard = shard_of(key, self.shards)
        if not self.member.is_leader():
            return False
        with self._lock:
            if shard not in self._held or shard in self._draining:
                return False
            self._inflight[shard] = self._inflight.get(shard, 0) + 1
            return True

    def exit(self, key: str) -> None:
        shard = shard_of(key, self.shards)
        with self._lock:
            left = self._inflight.get(shard, 0) - 1
            if left > 0:
                self._inflight[shard] = left
            else:
                self._inflight.pop(shard, None)

    def held(self) -> set[int]:
        with self._lock:
            return set(self._held)

    def is_member(self) -> bool:
        return self.member.is_leader()

    # -- the state machine ----------------------------------------------------------------------
    def step(self) -> float | None:
        """Renew our membership, then move shards toward the assignment; seconds until the next step.

        None once stopped or after the membership was lost (the replica is done).
        """
        if self._stopped:
            return None
        member_delay = self.member.step()
        if not self.member.is_leader():
            if self.member.state is ElectorState.STOPPED:
                self._lose_everything("the membership lease was lost")
                return None
            return member_delay if member_delay is not None else self.timing.retry_period
        now = self.clock.now()
        leases = list(self._view())
        self.live = self._live_members(leases, now)
        self._collect_departed(leases, now)
        owner = assign(self.shards, self.live)
        desired = {s for s, member in owner.items() if member == self.identity}
        if self.mismatched:
            # Another shard count maps keys to other shards: the two counts' shard Leases would not
            # exclude each other. Hold nothing until only one count is left (a rollout finished).
            log.error(
                "%s: members %s hash keys into another number of shards than our %d; holding no shard",
                self.identity,
                self.mismatched,
                self.shards,
            )
            desired = set()
        held = self.held()
        # Shard writes are bounded per step: the membership is renewed only between steps, and
        # two dozen hand-overs (two requests each) on a busy API server can outlast the renew
        # deadline. What is left is done by the next steps, which come at once.
        budget_end = now + self.timing.renew_deadline * _STEP_BUDGET
        released, unfinished = self._within(budget_end, held - desired, self._give_up)
        if released and self._on_released is not None:
            try:
                self._on_released(released)  # drained and released: no reconcile of them runs here
            except Exception:
                log.exception("%s: the on_released callback failed", self.identity)
        gained, more = self._within(budget_end, desired - held, self._take)
        unfinished = unfinished or more
        if gained:
            log.info(
                "%s: took shards %s (live members: %d)",
                self.identity,
                sorted(gained),
                len(self.live),
            )
            if self._on_gained is not None:
                try:
                    self._on_gained(gained)
                except Exception:
                    log.exception("%s: the on_gained callback failed", self.identity)
        if unfinished:
            return 0.0
        delay = self.timing.retry_period * (1.0 + 0.2 * self._rng.random())
        return min(delay, member_delay) if member_delay is not None else delay

    def _within(
        self, budget_end: float, shards: set[int], act: Callable[[int], bool]
    ) -> tuple[set[int], bool]:
        """``act`` on each shard in order until ``budget_end``; (the shards it did, whether some were left)."""
        done: set[int] = set()
        for shard in sorted(shards):
            if self.clock.now() >= budget_end:
                return done, True
            if act(shard):
                done.add(shard)
        return done, False

    def _list_view(self) -> list[dict]:
        client: ResourceClient[Any] = ResourceClient(
            self.api_client, LEASES, request_timeout=self.timing.renew_deadline
        )
        return client.list_all(self.namespace, label_selector={GROUP_LABEL: self.group}).items

    def _note(
        self, name: str, rv: str | None, record: LeaderElectionRecord | None, now: float
    ) -> _Seen:
        seen = self._seen.get(name)
        if seen is None or seen.rv != rv:
            seen = self._seen[name] = _Seen(rv, record, now)
        return seen

    def _live_members(self, leases: list[dict], now: float) -> list[str]:
        live = {self.identity}
        mismatched = []
        for lease in leases:
            md = lease.get("metadata") or {}
            labels = md.get("labels") or {}
            if labels.get(ROLE_LABEL) != "member" or labels.get(GROUP_LABEL) != self.group:
                continue
            record = LeaderElectionRecord.from_spec(lease.get("spec"))
            seen = self._note(md.get("name", ""), md.get("resourceVersion"), record, now)
            if record.holder and now < seen.since + max(record.lease_duration, 1):
                live.add(record.holder)
                if labels.get(SHARDS_LABEL, str(self.shards)) != str(self.shards):
                    mismatched.append(record.holder)
        self.mismatched = sorted(mismatched)
        return sorted(live)

    def _collect_departed(self, leases: list[dict], now: float) -> None:
        """Delete member Leases of replicas long gone, so restarts do not pile Leases up.

        A member Lease is deleted when we have seen the same version of it for
        ``GC_AFTER`` lease durations and no shard Lease names its holder. The
        delete carries that resourceVersion as a precondition, so a member that
        renewed meanwhile (our view was stale) keeps its Lease. Any replica may
        do it; a lost race is a harmless Conflict or NotFound.
        """
        named = set()
        members = []
        for lease in leases:
            md = lease.get("metadata") or {}
            labels = md.get("labels") or {}
            if labels.get(GROUP_LABEL) != self.group:
                continue
            holder = (lease.get("spec") or {}).get("holderIdentity") or ""
            if labels.get(ROLE_LABEL) == "shard":
                named.add(holder)
            elif labels.get(ROLE_LABEL) == "member":
                members.append((md, holder, lease.get("spec") or {}))
        client: ResourceClient[Any] | None = None
        for md, holder, spec in members:
            seen = self._seen.get(md.get("name", ""))
            duration = max(int(spec.get("leaseDurationSeconds") or 0), 1)
            if (
                holder == self.identity
                or holder in named
                or seen is None
                or seen.rv != md.get("resourceVersion")
            ):
                continue
            if now < seen.since + self.GC_AFTER * max(duration, self.timing.lease_duration):
                continue
            client = client or ResourceClient(
                self.api_client, LEASES, request_timeout=self.timing.renew_deadline
            )
            try:
                client.delete(
                    md["name"],
                    self.namespace,
                    preconditions={"resourceVersion": md["resourceVersion"]},
                )
                log.info(
                    "%s: deleted the member Lease of departed replica %r", self.identity, holder
                )
            except Exception as err:  # Conflict (it renewed), NotFound (someone else deleted it)
                log.debug(
                    "%s: not deleting member Lease %s: %s", self.identity, md.get("name"), err
                )
            self._seen.pop(md.get("name", ""), None)

    def _gone(self, holder: str) -> bool:
        """Whether member ``holder`` provably does no work: a fresh read of its Lease proves it."""
        if holder == self.identity:
            return True  # our own claim (from an answer we lost): ours to renew
        name = member_lease_name(self.group, holder)
        client: ResourceClient[Any] = ResourceClient(
            self.api_client, LEASES, request_timeout=self.timing.renew_deadline
        )
        try:
            lease = client.get(name, self.namespace)
        except NotFound:
            lease = None
        except Exception as err:
            log.info("%s: reading member %s failed: %s", self.identity, holder, err)
            return False
        now = self.clock.now()
        record = LeaderElectionRecord.from_spec(lease.get("spec")) if lease else None
        rv = (lease.get("metadata") or {}).get("resourceVersion") if lease else None
        seen = self._note(name, rv, record, now)
        if record is not None and record.holder != holder:
            return True  # released (holder ""): it stopped all work before writing that
        duration = (
            max(record.lease_duration, 1)
            if record
            else LeaderElectionRecord.duration_seconds(self.timing.lease_duration)
        )
        return now >= seen.since + duration

    def _take(self, shard: int) -> bool:
        lock = self._shard_locks[shard]
        timeout = self.timing.renew_deadline
        wall = self.clock.time()
        mine = LeaderElectionRecord(
            holder=self.identity,
            lease_duration=LeaderElectionRecord.duration_seconds(self.timing.lease_duration),
            acquire_time=wall,
            renew_time=wall,
        )
        try:
            try:
                record, rv = lock.get(timeout=timeout)
            except NotFound:
                if not self.member.is_leader():
                    return False
                lock.create(mine, timeout=timeout)
                return self._hold(shard)
            if record.holder and record.holder != self.identity and not self._gone(record.holder):
                return False  # its owner will give it up when it sees the new membership
            if not self.member.is_leader():
                return False
            transitions = record.transitions + (0 if record.holder == self.identity else 1)
            lock.update(
                LeaderElectionRecord(mine.holder, mine.lease_duration, wall, wall, transitions),
                rv,
                timeout=timeout,
            )
        except Conflict:
            return False  # someone else moved first; the next step looks again
        except Exception as err:
            log.info("%s: taking shard %d failed: %s", self.identity, shard, err)
            return False
        return self._hold(shard)

    def _hold(self, shard: int) -> bool:
        with self._lock:
            self._held.add(shard)
            self._draining.discard(shard)
        self.handovers += 1
        return True

    def _give_up(self, shard: int) -> bool:
        """Drain and release ``shard``; True once it is released (False: the next step tries again)."""
        with self._lock:
            self._draining.add(shard)  # no new reconcile of this shard from now on
            if self._inflight.get(shard):
                return False  # drain first; the next step tries again
        if self._release(shard):
            with self._lock:
                self._held.discard(shard)
                self._draining.discard(shard)
            return True
        return False

    def _release(self, shard: int) -> bool:
        lock = self._shard_locks[shard]
        timeout = self.timing.renew_deadline
        try:
            record, rv = lock.get(timeout=timeout)
        except NotFound:
            return True
        except Exception as err:
            log.info("%s: reading shard %d to release it failed: %s", self.identity, shard, err)
            return False
        if record.holder != self.identity:
            return True  # not ours any more (we cannot be valid and have lost it; be safe anyway)
        wall = self.clock.time()
        try:
            lock.update(
                LeaderElectionRecord("", 1, wall, wall, record.transitions), rv, timeout=timeout
            )
        except Exception as err:
            log.info("%s: releasing shard %d failed: %s", self.identity, shard, err)
            return False
        return True

    def _lose_everything(self, why: str) -> None:
        with self._lock:
            had = sorted(self._held)
            self._held.clear()
            self._draining.clear()
            first = not self._stopped
            self._stopped = True
        if first:
            log.warning("%s: %s; dropping shards %s", self.identity, why, had)
            if self._on_lost is not None:
                try:
                    self._on_lost()
                except Exception:
                    log.exception("%s: the on_lost callback failed", self.identity)

    # -- leaving --------------------------------------------------------------------------------
    def leave(self, drain_timeout: float = 30.0) -> bool:
        """Leave cleanly: stop admitting, wait for reconciles in flight, release every shard, then the membership.

        Returns True when every shard was released (a shard left named by
        us is taken over once our membership is seen released or expired).
        ``drain_timeout`` is real seconds.
        """
        with self._lock:
            self._draining |= self._held
        drained = threading.Event()
        deadline = REAL_CLOCK.now() + drain_timeout
        while REAL_CLOCK.now() < deadline:
            with self._lock:
                if not any(self._inflight.get(s) for s in self._held):
                    drained.set()
                    break
            drained.wait(0.01)
        clean = drained.is_set()
        for shard in sorted(self.held()):
            if clean and self._release(shard):
                with self._lock:
                    self._held.discard(shard)
        with self._lock:
            left = bool(self._held)
            self._held.clear()
            self._draining.clear()
            self._stopped = True
        if clean:
            self.member.release_on_cancel = True  # our membership, released only after our shards
        self.member.stop()
        return clean and not left

    # -- running --------------------------------------------------------------------------------
    def run(self) -> None:
        """Step until the membership is lost or :meth:`stop`/:meth:`halt` is called (blocking)."""
        self._runner.run()

    def start(self) -> threading.Thread:
        """Run in a daemon thread ``pyinformers-sharding-<group>``; returns it."""
        return self._runner.start()

    def halt(self, timeout: float = 30.0) -> bool:
        """Stop stepping *without* leaving: renewals stop, so the membership lapses (a frozen replica)."""
        self._runner.halt()
        return self._runner.join(timeout)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop stepping, then :meth:`leave`. Returns what :meth:`leave` returned."""
        self.halt(timeout)
        return self.leave(timeout)

    def __repr__(self) -> str:
        with self._lock:
            held, draining = len(self._held), len(self._draining)
        return (
            f"<ShardCoordinator {self.namespace}/{self.group} {self.identity!r} held={held} "
            f"draining={draining} live={len(self.live)}>"
        )
