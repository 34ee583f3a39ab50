"""Queues against small reference models (hypothesis).

* :class:`QueueMachine` drives a :class:`Queue` with adds, gets, dones and
  shutdowns and compares it with an ordered dirty set, a processing set and
  a shutdown flag.
* ``test_add_after_matches_a_model_of_earliest_deadlines`` drives a
  :class:`DelayingQueue` on a fake clock with ``add_after`` and clock steps
  and compares it with a dict of earliest deadlines.
"""

from __future__ import annotations

import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyinformers.clock import FakeClock
from pyinformers.workqueue import DelayingQueue, Queue

ITEMS = st.sampled_from(["a", "b", "c", "d", ("ns", "e")])


class QueueMachine(RuleBasedStateMachine):
    """The queue is a function of: the order of waiting items (dirty and not
    processing), the dirty items being processed, the processing set, and
    whether it is shutting down."""

    def __init__(self) -> None:
        super().__init__()
        self.queue = Queue()
        self.order: list = []  # model of the queue: dirty items not processing, in hand-out order
        self.dirty: set = set()
        self.processing: set = set()
        self.shut = False

    @rule(item=ITEMS)
    def add(self, item):
        self.queue.add(item)
        if self.shut or item in self.dirty:
            return
        self.dirty.add(item)
        if item not in self.processing:
            self.order.append(item)

    @precondition(lambda self: self.order)
    @rule()
    def get_an_item(self):
        item, shutting_down = self.queue.get(timeout=0)
        expected = self.order.pop(0)
        assert (item, shutting_down) == (expected, False)
        self.dirty.remove(item)
        self.processing.add(item)

    @precondition(lambda self: not self.order)
    @rule()
    def get_from_an_empty_queue(self):
        if self.shut:
            assert self.queue.get(timeout=0) == (None, True)
        else:
            try:
                self.queue.get(timeout=0)
            except TimeoutError:
                pass
            else:
                raise AssertionError("get on an empty queue returned an item")

    @precondition(lambda self: self.processing)
    @rule(data=st.data())
    def done(self, data):
        item = data.draw(st.sampled_from(sorted(self.processing, key=repr)))
        self.queue.done(item)
        self.processing.remove(item)
        if item in self.dirty:
            self.order.append(item)

    @rule(item=ITEMS)
    def done_for_an_item_not_processing(self, item):
        if item in self.processing:
            return
        self.queue.done(item)

    @rule()
    def shutdown(self):
        self.queue.shutdown()
        self.shut = True

    @invariant()
    def lengths_match(self):
        assert len(self.queue) == len(self.order)
        assert self.queue.processing_count() == len(self.processing)
        assert self.queue.shutting_down() == self.shut

    @invariant()
    def nothing_waits_while_it_is_processed(self):
        assert not set(self.order) & self.processing
        assert set(self.order) <= self.dirty


TestQueueAgainstModel = QueueMachine.TestCase
TestQueueAgainstModel.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)


def _settle(clock: FakeClock, deadline: float) -> None:
    """Wait (in real time, bounded) until the delay thread is armed for ``deadline``.

    The queue keeps a far-future sentinel waiting, so after every pass the delay
    thread waits on the clock again: being armed for the model's earliest
    deadline means it has finished adding everything that was due.
    """
    tick = threading.Event()
    give_up = time.monotonic() + 5.0
    while time.monotonic() < give_up:
        armed = clock.next_deadline()
        # The thread arms for (ready_at - now) + now: equal up to rounding.
        if clock.waiter_count() == 1 and armed is not None and abs(armed - deadline) < 1e-6:
            return
        tick.wait(0.0005)
    raise AssertionError(f"delay thread not armed for {deadline}: {clock.next_deadline()}")


SENTINEL = "sentinel"
FAR = 10.0**6

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add_after"), ITEMS, st.integers(-2, 12)),
        st.tuples(st.just("add"), ITEMS, st.just(0)),
        st.tuples(st.just("step"), st.just(None), st.integers(0, 6)),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_add_after_matches_a_model_of_earliest_deadlines(operations):
    clock = FakeClock()
    q = DelayingQueue(clock=clock)
    try:
        start = clock.now()
        q.add_after(SENTINEL, FAR)
        waiting: dict = {SENTINEL: (start + FAR, 0)}  # item -> (earliest deadline, seq)
        seq = 1
        order: list = []  # model of the queue (nothing is ever taken out)
        for op, item, amount in operations:
            if op == "add" or (op == "add_after" and amount <= 0):
                q.add_after(item, amount) if op == "add_after" else q.add(item)
                if item not in order:
                    order.append(item)
            elif op == "add_after":
                q.add_after(item, amount)
                deadline = clock.now() + amount
                if item not in waiting or deadline < waiting[item][0]:
                    waiting[item] = (deadline, seq)
                    seq += 1
            else:
                clock.step(amount)
                now = clock.now()
                for ready in sorted((entry, key) for key, entry in waiting.items() if entry[0] <= now):
                    _, key = ready
                    del waiting[key]
                    if key not in order:
                        order.append(key)
            _settle(clock, min(entry[0] for entry in waiting.values()))
            assert len(q) == len(order)
            assert q.waiting_count() == len(waiting)
        handed_out = []
        while len(q):
            item, _ = q.get(timeout=0)
            handed_out.append(item)
        assert handed_out == order
    finally:
        q.shutdown()
