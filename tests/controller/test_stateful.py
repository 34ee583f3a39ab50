"""A stateful test: what reconcile outcomes do to keys, against a small model, on a fake clock.

The model tracks, per key, the failures since it was last forgotten, the keys
ready to be handed out, and the earliest time each delayed key comes back.
Hypothesis interleaves adds, reconciles with any outcome (success, raise,
requeue, requeue_after) and clock steps; after every step the controller's
queue and rate limiter must agree with the model.
"""

from __future__ import annotations

import logging

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import CollectorRegistry

from pyinformers.clock import FakeClock
from pyinformers.controller import Controller, Result
from pyinformers.workqueue import ItemExponentialFailureRateLimiter

KEYS = st.sampled_from(["ns/a", "ns/b", "ns/c"])
BASE = 1.0  # backoff: 1, 2, 4, ... seconds
OUTCOMES = st.one_of(
    st.just(None),
    st.just("raise"),
    st.just(Result(requeue=True)),
    st.builds(lambda s: Result(requeue_after=s), st.sampled_from([0, 0.5, 1.0, 3.0])),
)


class _Scripted(Controller):
    def __init__(self, **options):
        super().__init__("stateful", **options)
        self.next_outcome = None

    def reconcile(self, key):
        if self.next_outcome == "raise":
            raise RuntimeError("scripted failure")
        return self.next_outcome


class ControllerModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        logging.getLogger("pyinformers.controller.stateful").disabled = True
        self.clock = FakeClock()
        self.c = _Scripted(
            clock=self.clock,
            rate_limiter=ItemExponentialFailureRateLimiter(BASE, 1000.0),
            metrics_registry=CollectorRegistry(),
        )
        self.failures: dict[str, int] = {}
        self.ready: set[str] = set()
        self.delayed: dict[str, float] = {}  # key -> earliest time it is re-added
        self.results = {"success": 0, "error": 0, "requeue": 0, "requeue_after": 0}

    def teardown(self):
        self.c.stop(5)
        logging.getLogger("pyinformers.controller.stateful").disabled = False

    def _delay(self, key, seconds):
        if seconds <= 0:
            self.ready.add(key)
            return
        at = self.clock.now() + seconds
        self.delayed[key] = min(self.delayed.get(key, at), at)

    @rule(key=KEYS)
    def add(self, key):
        self.c.queue.add(key)
        self.ready.add(key)

    @precondition(lambda self: self.ready)
    @rule(outcome=OUTCOMES)
    def reconcile_next(self, outcome):
        key, shutdown = self.c.queue.get(timeout=0)
        assert not shutdown and key in self.ready
        self.ready.discard(key)
        self.c.next_outcome = outcome
        label = self.c.process(key)
        self.results[label] += 1
        if outcome is None or (isinstance(outcome, Result) and outcome.done):
            assert label == "success"
            self.failures.pop(key, None)
        elif outcome == "raise" or (isinstance(outcome, Result) and outcome.requeue_after is None):
            assert label == ("error" if outcome == "raise" else "requeue")
            n = self.failures.get(key, 0)
            self.failures[key] = n + 1
            self._delay(key, BASE * 2**n)
        else:
            assert label == "requeue_after"
            self.failures.pop(key, None)
            self._delay(key, outcome.requeue_after)

    @rule(seconds=st.sampled_from([0.25, 0.5, 1.0, 2.0, 5.0]))
    def advance(self, seconds):
        self.clock.step(seconds)
        now = self.clock.now()
        for key, at in list(self.delayed.items()):
            if at <= now:
                del self.delayed[key]
                self.ready.add(key)
        # The queue's timer ran inside step(): the due keys are queued already (checked by the invariants).

    @invariant()
    def queue_matches_the_model(self):
        assert len(self.c.queue) == len(self.ready)
        assert self.c.queue.waiting_count() == len(self.delayed)
        for key in ("ns/a", "ns/b", "ns/c"):
            assert self.c.queue.num_requeues(key) == self.failures.get(key, 0), key

    @invariant()
    def metrics_match_the_model(self):
        registry = self.c.metrics_registry
        for label, count in self.results.items():
            got = registry.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": "stateful", "result": label}
            )
            assert got == count


ControllerModel.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
test_reconcile_outcomes_agree_with_the_model = ControllerModel.TestCase
