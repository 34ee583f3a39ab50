"""Tests for pyinformers.cache._delta_fifo: client-go's DeltaFIFO semantics."""

from __future__ import annotations

import threading

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyinformers.api.meta import object_key
from pyinformers.cache._delta_fifo import (
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    DeltaType,
    FIFOClosedError,
)
from pyinformers.cache._store import Indexer
from pyinformers.clock import FakeClock

A, U, D, R, S = (
    DeltaType.ADDED,
    DeltaType.UPDATED,
    DeltaType.DELETED,
    DeltaType.REPLACED,
    DeltaType.SYNC,
)


def obj(name, rv=1, ns="default"):
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv)}}


def pop_all(fifo):
    """Pop everything queued; return [(key, deltas, is_in_initial_list)]."""
    out = []

    def process(deltas, initial):
        out.append((fifo.key_of(deltas[-1].object), deltas, initial))

    while len(fifo):
        assert fifo.pop(process, timeout=0)
    return out


def applying(store):
    """A process function that applies deltas to a store, as an informer does."""

    def process(deltas, initial):
        for d in deltas:
            if d.type is D:
                store.delete(d.object)
            else:
                store.update(d.object)

    return process


def types(deltas):
    return [d.type for d in deltas]


def test_deltas_accumulate_per_key_in_arrival_order():
    fifo = DeltaFIFO()
    fifo.add(obj("a", 1))
    fifo.add(obj("b", 1))
    fifo.update(obj("a", 2))
    fifo.delete(obj("a", 3))
    assert fifo.list_keys() == ["default/a", "default/b"]
    popped = pop_all(fifo)
    assert [k for k, _, _ in popped] == ["default/a", "default/b"]
    assert types(popped[0][1]) == [A, U, D]
    assert popped[0][1][1].object == obj("a", 2)


def test_consecutive_deletes_collapse_keeping_the_real_object_over_a_tombstone():
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    fifo.delete(obj("a", 2))
    fifo.delete(DeletedFinalStateUnknown("default/a", obj("a", 1)))
    assert fifo.get_by_key("default/a") == (Delta(A, obj("a")), Delta(D, obj("a", 2)))
    fifo.delete(obj("a", 3))  # a real object replaces the older delete
    assert fifo.get_by_key("default/a")[-1] == Delta(D, obj("a", 3))
    assert len(fifo.get_by_key("default/a")) == 2


def test_delete_of_an_unknown_key_is_ignored():
    fifo = DeltaFIFO(known_objects=Indexer())
    fifo.delete(obj("ghost"))
    assert len(fifo) == 0


def test_replace_emits_replaced_and_tombstones_for_vanished_known_objects():
    store = Indexer()
    store.add(obj("kept", 1))
    store.add(obj("gone", 1))
    fifo = DeltaFIFO(known_objects=store)
    fifo.add(obj("queued-gone", 1))
    fifo.replace([obj("kept", 2), obj("new", 1)], "10")
    assert fifo.get_by_key("default/kept") == (Delta(R, obj("kept", 2)),)
    assert fifo.get_by_key("default/new") == (Delta(R, obj("new", 1)),)
    assert fifo.get_by_key("default/gone") == (
        Delta(D, DeletedFinalStateUnknown("default/gone", obj("gone", 1))),
    )
    assert fifo.get_by_key("default/queued-gone") == (
        Delta(A, obj("queued-gone", 1)),
        Delta(D, DeletedFinalStateUnknown("default/queued-gone", obj("queued-gone", 1))),
    )


def test_has_synced_after_the_initial_replace_is_popped_through():
    store = Indexer()
    fifo = DeltaFIFO(known_objects=store)
    assert not fifo.has_synced()
    fifo.replace([obj("a"), obj("b")], "1")
    flags = []
    fifo.pop(lambda d, initial: flags.append(initial), timeout=0)
    assert not fifo.has_synced()
    fifo.add(obj("c"))
    fifo.pop(lambda d, initial: flags.append(initial), timeout=0)
    assert fifo.has_synced()
    fifo.pop(lambda d, initial: flags.append(initial), timeout=0)
    assert flags == [True, True, False]


def test_empty_initial_replace_is_synced_at_once():
    fifo = DeltaFIFO()
    fifo.replace([], "1")
    assert fifo.has_synced()


def test_resync_replays_known_objects_not_already_queued():
    store = Indexer()
    store.add(obj("a", 1))
    store.add(obj("b", 1))
    fifo = DeltaFIFO(known_objects=store)
    fifo.update(obj("a", 2))
    fifo.resync()
    assert fifo.get_by_key("default/a") == (Delta(U, obj("a", 2)),)
    assert fifo.get_by_key("default/b") == (Delta(S, obj("b", 1)),)


def test_transform_applies_to_entering_objects_not_to_tombstones_or_syncs():
    seen = []

    def transform(o):
        seen.append(o["metadata"]["name"])
        return {**o, "transformed": True}

    store = Indexer()
    store.add(obj("known"))
    fifo = DeltaFIFO(known_objects=store, transform=transform)
    fifo.add(obj("a"))
    fifo.replace([obj("b")], "1")
    pop_all(fifo)
    fifo.resync()
    assert seen == ["a", "b"]
    # the store still holds "known" (pop_all applied nothing): replayed untransformed
    assert fifo.get_by_key("default/known") == (Delta(S, obj("known")),)
    tomb = DeletedFinalStateUnknown("default/x", obj("x"))
    fifo.update(obj("x"))
    fifo.delete(tomb)
    assert fifo.get_by_key("default/x")[-1].object is tomb


def test_a_key_in_process_is_not_handed_to_a_second_pop():
    fifo = DeltaFIFO()
    fifo.add(obj("a", 1))
    entered, release = threading.Event(), threading.Event()
    first: list = []

    def slow(deltas, initial):
        first.append(deltas)
        entered.set()
        assert release.wait(10)

    t = threading.Thread(target=fifo.pop, args=(slow,), name="pyinformers-test-pop", daemon=True)
    t.start()
    assert entered.wait(10)
    fifo.update(obj("a", 2))
    fifo.add(obj("b"))
    second: list = []
    assert fifo.pop(lambda d, i: second.append(d), timeout=0)  # gets b, skipping busy a
    assert [fifo.key_of(d[-1].object) for d in second] == ["default/b"]
    assert not fifo.pop(lambda d, i: second.append(d), timeout=0)  # only busy a is left
    release.set()
    t.join(10)
    assert fifo.pop(lambda d, i: second.append(d), timeout=0)
    assert second[-1] == (Delta(U, obj("a", 2)),)


def test_pop_times_out_on_the_clock():
    clock = FakeClock()
    fifo = DeltaFIFO(clock=clock)
    result = []
    t = threading.Thread(
        target=lambda: result.append(fifo.pop(lambda d, i: None, timeout=5)),
        name="pyinformers-test-pop",
        daemon=True,
    )
    t.start()
    clock.block_until_waiters(1)
    clock.step(5)
    t.join(10)
    assert result == [False]


def test_close_wakes_a_blocked_pop():
    fifo = DeltaFIFO()
    errors = []

    def run():
        try:
            fifo.pop(lambda d, i: None)
        except FIFOClosedError as e:
            errors.append(e)

    t = threading.Thread(target=run, name="pyinformers-test-pop", daemon=True)
    t.start()
    fifo.close()
    t.join(10)
    assert not t.is_alive() and len(errors) == 1
    assert fifo.closed
    with pytest.raises(FIFOClosedError):
        fifo.pop(lambda d, i: None, timeout=0)


def test_process_error_requeues_when_asked():
    fifo = DeltaFIFO(requeue_on_error=True)
    fifo.add(obj("a", 1))

    def boom(deltas, initial):
        fifo.update(obj("a", 2))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fifo.pop(boom, timeout=0)
    assert types(fifo.get_by_key("default/a")) == [A, U]
    dropping = DeltaFIFO()
    dropping.add(obj("a"))
    with pytest.raises(RuntimeError):
        dropping.pop(lambda d, i: (_ for _ in ()).throw(RuntimeError("x")), timeout=0)
    assert len(dropping) == 0


def test_replace_sees_objects_still_in_process():
    store = Indexer()
    fifo = DeltaFIFO(known_objects=store)
    fifo.add(obj("a"))
    inner = []

    def process(deltas, initial):
        # the consumer has not stored "a" yet when a relist without it arrives
        fifo.replace([], "2")
        inner.append(fifo.get_by_key("default/a"))

    fifo.pop(process, timeout=0)
    assert inner == [(Delta(D, DeletedFinalStateUnknown("default/a", obj("a"))),)]


def test_repr_shows_state():
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    assert "queued=1" in repr(fifo) and "closed=False" in repr(fifo)


# ---------------------------------------------------------------- stateful: against a reference model

NAMES = ["a", "b", "c"]


class Model:
    """Per-key delta lists, a key queue, and the consumer's store."""

    def __init__(self):
        self.items: dict[str, list[Delta]] = {}
        self.queue: list[str] = []
        self.known: dict[str, dict] = {}
        self.populated = False
        self.initial = 0

    def push(self, key, delta):
        if key not in self.items:
            self.items[key] = [delta]
            self.queue.append(key)
            return
        last = self.items[key][-1]
        if delta.type is D and last.type is D:
            if not isinstance(delta.object, DeletedFinalStateUnknown):
                self.items[key][-1] = delta
            return
        self.items[key].append(delta)


class DeltaFIFOMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.store = Indexer()
        self.fifo = DeltaFIFO(known_objects=self.store)
        self.model = Model()
        self.rv = 0

    def next(self, name):
        self.rv += 1
        return obj(name, self.rv)

    @rule(name=st.sampled_from(NAMES), kind=st.sampled_from(["add", "update"]))
    def add_or_update(self, name, kind):
        o = self.next(name)
        getattr(self.fifo, kind)(o)
        self.model.populated = True
        self.model.push(object_key(o), Delta(A if kind == "add" else U, o))

    @rule(name=st.sampled_from(NAMES), tombstone=st.booleans())
    def delete(self, name, tombstone):
        o = self.next(name)
        key = object_key(o)
        arg = DeletedFinalStateUnknown(key, o) if tombstone else o
        self.fifo.delete(arg)
        self.model.populated = True
        if key in self.model.items or key in self.model.known:
            self.model.push(key, Delta(D, arg))

    @rule(names=st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
    def replace(self, names):
        objs = [self.next(n) for n in names]
        self.fifo.replace(objs, str(self.rv))
        m = self.model
        new = {object_key(o) for o in objs}
        for o in objs:
            m.push(object_key(o), Delta(R, o))
        for key in list(m.items):
            last = m.items[key][-1]
            if key not in new and last.type is not D:
                state = (
                    last.object.obj
                    if isinstance(last.object, DeletedFinalStateUnknown)
                    else last.object
                )
                m.push(key, Delta(D, DeletedFinalStateUnknown(key, state)))
        for key, state in list(m.known.items()):
            if key not in new and key not in m.items:
                m.push(key, Delta(D, DeletedFinalStateUnknown(key, state)))
        if not m.populated:
            m.populated = True
            m.initial = len(m.queue)

    @rule()
    def resync(self):
        self.fifo.resync()
        for key, state in self.model.known.items():
            if key not in self.model.items:
                self.model.push(key, Delta(S, state))

    @precondition(lambda self: self.model.queue)
    @rule()
    def pop(self):
        m = self.model
        key = m.queue.pop(0)
        expected = tuple(m.items.pop(key))
        expected_initial = not (m.populated and m.initial == 0)
        got = []
        assert self.fifo.pop(
            lambda d, i: (got.append((d, i)), applying(self.store)(d, i)), timeout=0
        )
        assert got == [(expected, expected_initial)]
        for d in expected:
            if d.type is D:
                m.known.pop(key, None)
            else:
                m.known[key] = d.object
        if m.initial:
            m.initial -= 1

    @invariant()
    def matches_model(self):
        assert self.fifo.list_keys() == self.model.queue
        for key, deltas in self.model.items.items():
            assert self.fifo.get_by_key(key) == tuple(deltas)
        assert self.fifo.has_synced() == (self.model.populated and self.model.initial == 0)
        assert {k: self.store.get_by_key(k) for k in self.store.list_keys()} == self.model.known


DeltaFIFOMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None
)
test_delta_fifo_against_model = DeltaFIFOMachine.TestCase


# ---------------------------------------------------------------- concurrency


def test_concurrent_producers_and_consumers_lose_nothing_and_never_share_a_key():
    fifo = DeltaFIFO()
    per_producer = 2000
    keys = [f"k{i}" for i in range(20)]
    lock = threading.Lock()
    active: set[str] = set()
    seen: dict[tuple[str, int], list[int]] = {}  # (key, producer) -> sequence numbers in order
    problems: list[str] = []
    producers_done = threading.Event()

    def produce(pid):
        for seq in range(per_producer):
            o = obj(keys[seq % len(keys)])
            o["metadata"]["labels"] = {"p": str(pid), "seq": str(seq)}
            fifo.update(o)

    def process(deltas, initial):
        key = deltas[0].object["metadata"]["name"]
        with lock:
            if key in active:
                problems.append(f"{key} handed to two consumers")
            active.add(key)
        for d in deltas:
            labels = d.object["metadata"]["labels"]
            seen.setdefault((key, int(labels["p"])), []).append(int(labels["seq"]))
        with lock:
            active.discard(key)

    def consume():
        try:
            while True:
                if (
                    not fifo.pop(process, timeout=0.05)
                    and producers_done.is_set()
                    and len(fifo) == 0
                ):
                    return
        except Exception as e:  # surfaced by the assertion below
            problems.append(repr(e))

    producers = [
        threading.Thread(
            target=produce, args=(p,), name=f"pyinformers-test-producer-{p}", daemon=True
        )
        for p in range(2)
    ]
    consumers = [
        threading.Thread(target=consume, name=f"pyinformers-test-consumer-{c}", daemon=True)
        for c in range(2)
    ]
    for t in producers + consumers:
        t.start()
    for t in producers:
        t.join(30)
    producers_done.set()
    for t in consumers:
        t.join(30)
    assert not any(t.is_alive() for t in producers + consumers)
    assert not problems, problems[:5]
    total = sum(len(v) for v in seen.values())
    assert total == 2 * per_producer
    for (key, pid), seqs in seen.items():
        assert seqs == sorted(seqs), f"{key} from producer {pid} out of order"


# -- the bounded hand-off (max_pending) ------------------------------------------------------
def _blocked(target, *args):
    """Run target(*args) on a thread; return (thread, done event)."""
    done = threading.Event()

    def run():
        target(*args)
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def test_a_bounded_fifo_makes_the_producer_wait_until_half_the_pending_deltas_are_popped():
    fifo = DeltaFIFO(max_pending=4)
    for i in range(4):
        fifo.add(obj(f"p{i}"))
    _thread, done = _blocked(fifo.update, obj("p9", rv=2))
    assert not done.wait(0.05)  # full: the producer waits
    assert fifo.pop(lambda deltas, initial: None, timeout=0)
    assert not done.wait(0.05)  # 3 pending: still above half
    assert fifo.pop(lambda deltas, initial: None, timeout=0)
    assert done.wait(5)  # 2 pending: room again
    assert fifo.list_keys() == ["default/p2", "default/p3", "default/p9"]


def test_deltas_of_one_key_count_towards_the_bound_and_collapsed_deletes_do_not():
    store = Indexer()
    store.add(obj("a"))
    fifo = DeltaFIFO(known_objects=store, max_pending=3)
    fifo.update(obj("a", rv=2))
    fifo.delete(obj("a", rv=3))
    fifo.delete(obj("a", rv=3))  # collapses into the previous delete: still 2 pending
    _thread, done = _blocked(fifo.update, obj("b"))
    assert done.wait(5)
    _thread, done = _blocked(fifo.update, obj("c"))
    assert not done.wait(0.05)  # 3 pending
    fifo.pop(lambda deltas, initial: None, timeout=0)  # a's two deltas
    assert done.wait(5)


def test_replace_and_resync_never_wait_and_close_releases_a_waiting_producer():
    store = Indexer()
    for i in range(5):
        store.add(obj(f"k{i}"))
    fifo = DeltaFIFO(known_objects=store, max_pending=2)
    fifo.replace([obj(f"n{i}") for i in range(10)], "7")  # 10 deltas + 5 tombstones, no wait
    fifo.resync()
    _thread, done = _blocked(fifo.add, obj("late"))
    assert not done.wait(0.05)
    fifo.close()
    assert done.wait(5)
    with pytest.raises(FIFOClosedError):
        fifo.pop(lambda deltas, initial: None, timeout=0)


def test_max_pending_must_be_positive():
    with pytest.raises(ValueError):
        DeltaFIFO(max_pending=0)


# -- a budget shared by several FIFOs (the informers of one process) -------------------------
def test_fifos_sharing_a_budget_wait_for_a_slot_that_a_pop_of_another_fifo_frees():
    from pyinformers.cache._delta_fifo import HandoffBudget

    budget = HandoffBudget(2, max_wait=10)
    first, second = DeltaFIFO(budget=budget), DeltaFIFO(budget=budget)
    first.add(obj("a"))
    second.add(obj("b"))
    assert budget.held == 2
    _thread, done = _blocked(second.update, obj("c"))
    assert not done.wait(0.05)  # both slots taken, by either FIFO
    assert first.pop(lambda deltas, initial: None, timeout=0)  # hands its slot back
    assert done.wait(5)
    assert budget.held == 2 and second.list_keys() == ["default/b", "default/c"]
    second.close()  # what a closed FIFO held is given back
    assert budget.held == 0


def test_a_full_budget_delays_a_producer_at_most_max_wait_and_replace_takes_no_slot():
    from pyinformers.cache._delta_fifo import HandoffBudget

    budget = HandoffBudget(1, max_wait=0.01)
    stuck, other = DeltaFIFO(budget=budget), DeltaFIFO(budget=budget)
    stuck.add(obj("a"))  # its consumer never pops
    other.add(obj("b"))  # waits at most 10 ms, then goes on: the budget is advisory
    assert other.list_keys() == ["default/b"] and budget.held == 2
    assert other.pop(lambda deltas, initial: None, timeout=0)
    assert budget.held == 1
    other.replace([obj(f"r{i}") for i in range(5)], "3")
    assert budget.held == 1
    while other.pop(
        lambda deltas, initial: None, timeout=0
    ):  # popping listed keys gives back nothing
        pass
    assert budget.held == 1
    with pytest.raises(ValueError):
        HandoffBudget(0)


# -- inline delivery (deliver_inline) --------------------------------------------------------
class InlineDeltaFIFOMachine(DeltaFIFOMachine):
    """The same model, with a consumer that takes changes inline whenever the FIFO is synced and empty."""

    def __init__(self):
        super().__init__()
        self.delivered: list[tuple[str, DeltaType]] = []

        def deliver(key, delta_type, o):
            assert key == self.fifo.key_of(o)
            self.delivered.append((key, delta_type))
            applying(self.store)((Delta(delta_type, o),), False)

        self.fifo.deliver_inline(deliver)

    def _inline(self):
        m = self.model
        return not m.queue and m.populated and m.initial == 0

    @rule(name=st.sampled_from(NAMES), kind=st.sampled_from(["add", "update"]))
    def add_or_update(self, name, kind):
        if not self._inline():
            return super().add_or_update(name, kind)
        o = self.next(name)
        getattr(self.fifo, kind)(o)
        self.model.known[object_key(o)] = o
        assert self.delivered[-1] == (object_key(o), A if kind == "add" else U)

    @rule(name=st.sampled_from(NAMES), tombstone=st.booleans())
    def delete(self, name, tombstone):
        if not self._inline():
            return super().delete(name, tombstone)
        o = self.next(name)
        key = object_key(o)
        before = len(self.delivered)
        self.fifo.delete(DeletedFinalStateUnknown(key, o) if tombstone else o)
        if key in self.model.known:
            del self.model.known[key]
            assert self.delivered[before:] == [(key, D)]
        else:
            assert len(self.delivered) == before  # nothing to tell the consumer


InlineDeltaFIFOMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None
)
test_inline_delivery_against_model = InlineDeltaFIFOMachine.TestCase


def test_inline_delivery_waits_for_the_sync_and_for_an_empty_fifo():
    store = Indexer()
    fifo = DeltaFIFO(known_objects=store)
    delivered = []
    fifo.deliver_inline(lambda key, t, o: (delivered.append((key, t)), store.update(o)))
    fifo.replace([obj("a")], "1")
    fifo.update(obj("a", 2))  # the initial list is still queued: this queues behind it
    assert delivered == [] and fifo.list_keys() == ["default/a"]
    pop_all(fifo)
    fifo.update(obj("b", 3))  # synced and empty: delivered on this thread
    assert delivered == [("default/b", U)] and len(fifo) == 0
    fifo.resync()  # a resync queues (b: what the store holds), and the next change queues behind it
    fifo.update(obj("a", 4))
    assert delivered == [("default/b", U)]
    assert {k: types(d) for k, d, _ in pop_all(fifo)} == {"default/b": [S], "default/a": [U]}
    fifo.close()
    fifo.update(obj("c", 5))  # closed: nobody takes it
    assert delivered == [("default/b", U)]


def test_a_key_being_popped_is_not_delivered_inline_and_a_failing_delivery_is_requeued():
    fifo = DeltaFIFO(requeue_on_error=True)
    fifo.add(obj("a"))
    pop_all(fifo)
    seen = []

    def deliver(key, t, o):
        raise RuntimeError("consumer failed")

    fifo.deliver_inline(deliver)
    with pytest.raises(RuntimeError):
        fifo.update(obj("a", 2))
    assert fifo.get_by_key("default/a") == (Delta(U, obj("a", 2)),)  # requeued for a pop
    fifo.deliver_inline(lambda key, t, o: seen.append(("inline", key)))

    def process(deltas, initial):
        fifo.update(obj("a", 3))  # while "a" is being popped: queued, never inline
        seen.append(("pop", types(deltas)))

    assert fifo.pop(process, timeout=0)
    assert seen == [("pop", [U])] and fifo.list_keys() == ["default/a"]


def test_inline_delivery_keeps_per_key_order_against_a_concurrent_consumer_and_resyncs():
    store = Indexer()
    fifo = DeltaFIFO(known_objects=store)
    keys = [f"k{i}" for i in range(10)]
    lock = threading.Lock()
    active: set[str] = set()
    seen: dict[str, list[int]] = {}
    problems: list[str] = []

    def apply(key, o):
        with lock:
            if key in active:
                problems.append(f"{key} delivered by two threads at once")
            active.add(key)
        seq = int(o["metadata"]["resourceVersion"])
        seen.setdefault(key, []).append(seq)
        store.update(o)
        with lock:
            active.discard(key)

    fifo.replace([obj(k, 0) for k in keys], "0")
    pop_all(fifo)
    fifo.deliver_inline(lambda key, t, o: apply(key, o))
    done = threading.Event()

    def consume():
        while not done.is_set() or len(fifo):
            fifo.pop(
                lambda deltas, initial: [
                    apply(fifo.key_of(d.object), d.object) for d in deltas if d.type is not S
                ],
                timeout=0.01,
            )

    def resync():
        while not done.is_set():
            fifo.resync()

    threads = [
        threading.Thread(target=f, name=f"pyinformers-test-{f.__name__}", daemon=True)
        for f in (consume, resync)
    ]
    for t in threads:
        t.start()
    for seq in range(1, 3001):
        fifo.update(obj(keys[seq % len(keys)], seq))
    done.set()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert not problems, problems[:5]
    for key, seqs in seen.items():
        assert seqs == sorted(seqs), f"{key} went back in time"
    assert {k: store.get_by_key(f"default/{k}")["metadata"]["resourceVersion"] for k in keys} == {
        k: str(max(s for s in range(3001) if keys[s % len(keys)] == k)) for k in keys
    }
