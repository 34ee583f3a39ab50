"""Queues against small reference models (hypothesis).

* :class:`QueueMachine` drives a :class:`Queue` with adds, gets, dones and
  shutdowns and compares it with an ordered dirty set, a processing set and
  a shutdown flag.
* :class:`DelayingQueueMachine` adds ``add_after`` and fake clock steps, and
  compares the waiting items with a dict of earliest ready times: after every
  step the items due are queued, in ready-time order, then in the order given.
"""

from __future__ import annotations

from hypothesis import settings
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
        self.model_add(item)

    def model_add(self, item, at=None) -> None:
        """The model's side of an add the queue has made; ``at``: when, if not now."""
        if self.shut or item in self.dirty:
            return
        self.dirty.add(item)
        self.became_dirty(item, at)
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
        self.handed_out(item)

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
        self.finished(item)
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

    # Hooks for machines that model more than the queue (its metrics): the transitions of the model.
    def became_dirty(self, item, at) -> None:
        """An add made ``item`` waiting (it was not), at clock time ``at`` (None: now)."""

    def handed_out(self, item) -> None:
        """``get`` handed ``item`` out."""

    def finished(self, item) -> None:
        """``done`` finished ``item``, which was being processed."""

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


class DelayingQueueMachine(QueueMachine):
    """The queue model above, plus the items waiting for their ready time: a dict
    ``item -> (earliest ready time, order given)`` on a fake clock.

    The delaying queue keeps time with one clock timer, which ``step`` runs, so
    the queue is compared with the model right after every step, with no waiting.
    """

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.queue = DelayingQueue(clock=self.clock)
        self.waiting: dict = {}  # item -> (ready time, seq): the earliest one it was given
        self.seq = 0

    def teardown(self) -> None:
        self.queue.shutdown()

    @rule(item=ITEMS, delay=st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 7.0]))
    def add_after(self, item, delay):
        self.queue.add_after(item, delay)
        if self.shut:
            return
        self.retried(item)
        if delay <= 0:
            self.model_add(item)
            return
        ready_at = self.clock.now() + delay
        if item not in self.waiting or ready_at < self.waiting[item][0]:
            self.waiting[item] = (ready_at, self.seq)
            self.seq += 1

    def retried(self, item) -> None:
        """``add_after`` was called (a retry, as the queue's metrics count them) before shutdown."""

    @rule(seconds=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 10.0]))
    def step(self, seconds):
        self.clock.step(seconds)
        now = self.clock.now()
        for entry, item in sorted(
            (entry, item) for item, entry in self.waiting.items() if entry[0] <= now
        ):
            del self.waiting[item]
            self.model_add(item, at=entry[0])  # the timer added it at its ready time

    @rule()
    def shutdown(self):
        super().shutdown()
        self.waiting.clear()

    @invariant()
    def waiting_matches_the_model(self):
        assert self.queue.waiting_count() == len(self.waiting)
        # One timer, armed for the earliest ready time; none once nothing waits.
        assert self.clock.timer_count() == (1 if self.waiting else 0)
        if self.waiting:
            earliest = min(entry[0] for entry in self.waiting.values())
            assert abs(self.clock.next_timer_deadline() - earliest) < 1e-9


TestDelayingQueueAgainstModel = DelayingQueueMachine.TestCase
TestDelayingQueueAgainstModel.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
