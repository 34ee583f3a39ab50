"""A hypothesis stateful model: LeaderElectors against a model Lease store.

The store is a linearizable compare-and-swap register (what the API server
gives a Lease). Hypothesis interleaves candidates' steps with clock jumps,
writes that fail before or after they are applied, answers that arrive late
(the clock moves while a request is in flight), third-party writes that make
every cached resourceVersion stale, new candidates and clean stops, and
checks after every rule that

* at most one candidate considers itself leader *now*, and
* a candidate that considers itself leader is the holder the store names.

The model can fail: with the elector's late-answer rule removed (a renewal
answered after the deadline reviving leadership), fresh runs find two
leaders through ``slow_answer`` in about two runs out of three, and the
deterministic race tests below always do.
"""

from __future__ import annotations

import random
import threading

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pyinformers.api._errors import Conflict, NotFound, ServerError
from pyinformers.clock import FakeClock
from pyinformers.leaderelection import (
    ElectionTiming,
    ElectorState,
    LeaderElectionRecord,
    LeaderElector,
)

TIMING = ElectionTiming(lease_duration=15, renew_deadline=10, retry_period=2)


class Held:
    """A request parked in flight (before or after it reached the store) until the test delivers it."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()


class ModelStore:
    """One Lease: a record and a resourceVersion, with faults queued per candidate.

    Faults: ``fail_before`` (500, not applied), ``fail_after`` (applied, the
    answer lost), ``hold_before`` / ``hold_after`` (the request stays in
    flight, before or after it is applied, while other candidates step and
    the clock moves, until the test delivers it).
    """

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.record: LeaderElectionRecord | None = None
        self.rv = 0
        self.faults: dict[str, list[str]] = {}
        self.held: dict[str, Held] = {}
        self._lock = threading.Lock()

    def next_fault(self, identity: str) -> str:
        queue = self.faults.get(identity)
        return queue[0] if queue else "ok"

    def call(self, identity: str, apply):
        queue = self.faults.get(identity)
        kind = queue.pop(0) if queue else "ok"
        if kind == "fail_before":
            raise ServerError("injected before", code=500)
        if kind == "hold_before":
            self._park(identity)
        with self._lock:
            result = apply()  # the linearization point
        if kind == "hold_after":
            self._park(identity)
        if kind == "fail_after":
            raise ServerError("injected after apply (the answer was lost)", code=500)
        return result

    def _park(self, identity: str) -> None:
        held = self.held[identity]
        held.reached.set()
        assert held.release.wait(30), "a held request was never delivered"


class ModelLock:
    def __init__(self, store: ModelStore, identity: str) -> None:
        self.store = store
        self._identity = identity

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return "model/lock"

    def get(self, timeout=None):
        def apply():
            if self.store.record is None:
                raise NotFound("no lease", code=404)
            return self.store.record, str(self.store.rv)

        return self.store.call(self._identity, apply)

    def create(self, record, timeout=None):
        def apply():
            if self.store.record is not None:
                raise Conflict("already exists", code=409)
            self.store.record, self.store.rv = record, self.store.rv + 1
            return str(self.store.rv)

        return self.store.call(self._identity, apply)

    def update(self, record, resource_version, timeout=None):
        def apply():
            if self.store.record is None or str(self.store.rv) != resource_version:
                raise Conflict("stale resourceVersion", code=409)
            self.store.record, self.store.rv = record, self.store.rv + 1
            return str(self.store.rv)

        return self.store.call(self._identity, apply)


class ElectionModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.store = ModelStore(self.clock)
        self.electors: list[LeaderElector] = []
        self.inflight: dict[str, tuple[Held, threading.Thread]] = {}
        self.serial = 0
        for _ in range(2):
            self._add(False)

    @initialize(settle=st.booleans())
    def elect(self, settle):
        """Most runs start from the interesting place: a leader, and a follower that observed it."""
        if settle:
            self.electors[0].step()
            self.electors[1].step()

    def _add(self, release: bool) -> None:
        identity = f"c{self.serial}"
        self.serial += 1
        self.electors.append(
            LeaderElector(
                ModelLock(self.store, identity),
                timing=TIMING,
                clock=self.clock,
                release_on_cancel=release,
                rng=random.Random(self.serial),
            )
        )

    @precondition(lambda self: len(self._live()) < 3)
    @rule(release=st.booleans())
    def add_candidate(self, release):
        self._add(release)

    def _live(self) -> list:
        """Candidates still campaigning or leading (a stopped one is replaced, as a pod restarts)."""
        return [
            e
            for e in self.electors
            if e.state is not ElectorState.STOPPED or e.identity in self.inflight
        ]

    def _pick(self, index: int):
        live = self._live() or self.electors
        return live[index % len(live)]

    def _free(self, elector) -> bool:
        return elector.identity not in self.inflight

    @rule(
        index=st.integers(0, 3),
        fault=st.sampled_from(
            ["ok", "ok", "ok", "fail_before", "fail_after", "hold_before", "hold_after"]
        ),
    )
    def step(self, index, fault):
        elector = self._pick(index)
        if not self._free(elector):
            return
        self.store.faults[elector.identity] = [] if fault == "ok" else [fault]
        if fault.startswith("hold"):
            held = self.store.held[elector.identity] = Held()
            thread = threading.Thread(target=elector.step, name="model-step")
            thread.start()
            while thread.is_alive() and not held.reached.wait(0.001):
                pass
            if held.reached.is_set():  # parked: other rules run while it is in flight
                self.inflight[elector.identity] = (held, thread)
                return
            thread.join(10)  # it made no request (it had already stopped, or was due to lose)
            return
        elector.step()

    @rule(
        index=st.integers(0, 3),
        where=st.sampled_from(["hold_before", "hold_after"]),
        delay=st.sampled_from([2.0, 5.0, 10.1, 15.1]),
    )
    def slow_answer(self, index, where, delay):
        """One request of a candidate stays in flight for ``delay`` seconds while the others keep running."""
        elector = self._pick(index)
        if not self._free(elector):
            return
        self.step(index, where)
        if elector.identity not in self.inflight:
            return
        others = [e for e in self._live() if e is not elector and self._free(e)]
        for other in others:
            other.step()
        self.at_most_one_leader_and_it_holds_the_lease()
        self.clock.step(delay)
        for other in others:
            other.step()
        self.at_most_one_leader_and_it_holds_the_lease()
        self.deliver(index)

    @rule(index=st.integers(0, 3))
    def deliver(self, index):
        elector = self._pick(index)
        entry = self.inflight.pop(elector.identity, None)
        if entry is not None:
            event("delivered a held request")
            if any(e.is_leader() for e in self.electors if e is not elector):
                event("delivered a held request while another leads")
            entry[0].release.set()
            entry[1].join(10)
            assert not entry[1].is_alive()

    def teardown(self):
        for held, thread in self.inflight.values():
            held.release.set()
            thread.join(10)

    @rule(
        seconds=st.sampled_from(
            [0.0, 0.5, 1.9, 2.0, 2.1, 4.4, 5.0, 9.9, 10.0, 10.1, 14.9, 15.0, 15.1, 30.0]
        )
    )
    def advance(self, seconds):
        self.clock.step(seconds)

    @rule()
    def meddle(self):
        """Someone else writes the Lease's metadata: the record stays, the resourceVersion moves."""
        if self.store.record is not None:
            self.store.rv += 1

    @rule(index=st.integers(0, 3))
    def stop(self, index):
        elector = self._pick(index)
        if self._free(elector):
            elector.stop()

    @invariant()
    def at_most_one_leader_and_it_holds_the_lease(self):
        leaders = [e for e in self.electors if e.is_leader()]
        assert len(leaders) <= 1, f"two leaders at {self.clock.now()}: {leaders}"
        for leader in leaders:
            assert self.store.record is not None and self.store.record.holder == leader.identity

    @invariant()
    def stopped_candidates_do_not_lead(self):
        for e in self.electors:
            if e.state is ElectorState.STOPPED:
                assert not e.is_leader()


TestElectionModel = ElectionModel.TestCase
TestElectionModel.settings = settings(max_examples=500, stateful_step_count=40, deadline=None)


def test_a_renewal_answered_after_the_renew_deadline_does_not_revive_leadership():
    """The race the model hunts: a renewal applied at once but answered late, while a follower acts."""
    clock = FakeClock()
    store = ModelStore(clock)
    a = LeaderElector(ModelLock(store, "a"), timing=TIMING, clock=clock)
    b = LeaderElector(ModelLock(store, "b"), timing=TIMING, clock=clock)
    a.step()
    assert a.is_leader()
    b.step()  # b observes a's record
    clock.step(9)
    store.faults["a"] = ["hold_before"]
    held = store.held["a"] = Held()
    thread = threading.Thread(target=a.step)
    thread.start()  # a sends its renewal at t=9: it sits in the network
    assert held.reached.wait(10)
    clock.step(
        6.5
    )  # a's leadership (sent at 0, + 10) ended at t=10; b's view of the lease expires at 15
    assert not a.is_leader()
    b.step()  # b takes over
    assert b.is_leader()
    held.release.set()  # a's renewal reaches the server now: Conflict (b changed the version)
    thread.join(10)
    assert not a.is_leader() and b.is_leader()
    assert store.record.holder == "b"


def test_a_renewal_applied_at_once_but_answered_late_does_not_revive_leadership():
    clock = FakeClock()
    store = ModelStore(clock)
    a = LeaderElector(ModelLock(store, "a"), timing=TIMING, clock=clock)
    b = LeaderElector(ModelLock(store, "b"), timing=TIMING, clock=clock)
    a.step()
    store.faults["a"] = ["hold_after"]
    held = store.held["a"] = Held()
    thread = threading.Thread(target=a.step)
    thread.start()  # a's renewal applies now; its answer is delayed
    assert held.reached.wait(10)
    b.step()  # b observes the renewed record at once
    clock.step(15.1)
    b.step()  # unchanged for a lease duration by b's clock: b takes over
    assert b.is_leader()
    held.release.set()  # a hears back only now: its leadership ended at 10 s
    thread.join(10)
    assert not a.is_leader() and a.state is ElectorState.STOPPED
