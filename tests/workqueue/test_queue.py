"""Work queue rules, one test each: Queue, DelayingQueue, RateLimitingQueue, metrics."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.clock import FakeClock
from pyinformers.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    RateLimitingQueue,
)

JOIN = 10.0  # real seconds a test thread may take before the test fails


class Call:
    """Run ``fn`` on a thread and keep its result or exception."""

    def __init__(self, fn, *args):
        self.result = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(fn, args), name="test-call", daemon=True
        )
        self._thread.start()

    def _run(self, fn, args):
        try:
            self.result = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def join(self):
        self._thread.join(JOIN)
        assert not self._thread.is_alive(), "call did not return in time"
        if self.error is not None:
            raise self.error
        return self.result

    def alive(self) -> bool:
        return self._thread.is_alive()


def drain(q: Queue) -> list:
    """Get (and finish) every queued item, in order, without blocking."""
    items = []
    while len(q):
        item, shutting_down = q.get(timeout=0)
        assert not shutting_down
        items.append(item)
        q.done(item)
    return items


# -- Queue ------------------------------------------------------------------------------
def test_items_are_handed_out_in_the_order_they_were_first_added():
    q = Queue()
    for item in ["a", "b", "c", "a", "b"]:
        q.add(item)
    assert drain(q) == ["a", "b", "c"]


def test_an_item_added_twice_while_waiting_is_queued_once():
    q = Queue()
    q.add("a")
    q.add("a")
    assert len(q) == 1


def test_an_item_being_processed_is_not_handed_to_a_second_worker():
    q = Queue()
    q.add("a")
    item, _ = q.get(timeout=0)
    q.add("a")
    assert len(q) == 0
    with pytest.raises(TimeoutError):
        q.get(timeout=0)
    assert item == "a"


def test_an_item_added_while_processing_is_queued_again_on_done():
    q = Queue()
    q.add("a")
    q.add("b")
    item, _ = q.get(timeout=0)
    q.add("a")
    q.add("a")
    q.done(item)
    assert drain(q) == ["b", "a"]


def test_done_without_a_readd_does_not_queue_the_item_again():
    q = Queue()
    q.add("a")
    item, _ = q.get(timeout=0)
    q.done(item)
    assert len(q) == 0 and q.processing_count() == 0


def test_done_for_an_item_not_being_processed_does_nothing():
    q = Queue()
    q.add("a")
    q.done("a")  # queued, not processing
    q.done("zzz")
    assert drain(q) == ["a"]


def test_any_hashable_item_can_be_queued():
    q = Queue()
    q.add(("ns", "name"))
    q.add(42)
    q.add(("ns", "name"))
    assert drain(q) == [("ns", "name"), 42]


@pytest.mark.parametrize("name", [None, "foos"], ids=["unnamed", "named"])
def test_an_unhashable_item_is_refused_and_the_queue_stays_usable(name):
    q = Queue(name, metrics_registry=CollectorRegistry())
    with pytest.raises(TypeError):
        q.add(["not", "hashable"])
    q.add("a")  # the lock was released on the way out
    assert drain(q) == ["a"]


def test_len_counts_queued_items_not_processing_ones():
    q = Queue()
    q.add("a")
    q.add("b")
    q.get(timeout=0)
    assert len(q) == 1 and q.processing_count() == 1


def test_get_with_zero_timeout_raises_timeout_error_at_once_when_empty():
    q = Queue(clock=FakeClock())
    with pytest.raises(TimeoutError):
        q.get(timeout=0)


def test_get_times_out_when_the_fake_clock_passes_the_timeout():
    clock = FakeClock()
    q = Queue(clock=clock)
    call = Call(q.get, 5.0)
    clock.block_until_waiters(1)
    clock.step(4.9)
    assert call.alive()
    clock.step(0.1)
    with pytest.raises(TimeoutError):
        call.join()


def test_a_blocked_get_returns_the_item_added_later():
    clock = FakeClock()
    q = Queue(clock=clock)
    call = Call(q.get, 60.0)
    clock.block_until_waiters(1)
    q.add("a")
    assert call.join() == ("a", False)


def test_shutdown_wakes_every_waiting_get():
    clock = FakeClock()
    q = Queue(clock=clock)
    calls = [Call(q.get, 60.0) for _ in range(3)]
    clock.block_until_waiters(3)
    q.shutdown()
    assert [call.join() for call in calls] == [(None, True)] * 3


def test_after_shutdown_adds_are_ignored_and_queued_items_are_still_handed_out():
    q = Queue()
    q.add("a")
    q.shutdown()
    q.add("b")
    assert q.shutting_down()
    assert q.get() == ("a", False)
    assert q.get() == (None, True)
    assert q.get(timeout=0) == (None, True)


def test_shutdown_with_drain_waits_until_processing_is_empty():
    clock = FakeClock()
    q = Queue(clock=clock)
    q.add("a")
    item, _ = q.get()
    drained = Call(q.shutdown_with_drain, 30.0)
    clock.block_until_waiters(1)  # the drain is waiting
    assert drained.alive()
    q.done(item)
    assert drained.join() is True


def test_shutdown_with_drain_returns_at_once_when_nothing_is_processing():
    q = Queue(clock=FakeClock())
    assert q.shutdown_with_drain(timeout=0) is True


def test_shutdown_with_drain_gives_up_after_its_timeout():
    clock = FakeClock()
    q = Queue(clock=clock)
    q.add("a")
    q.get()
    drained = Call(q.shutdown_with_drain, 30.0)
    clock.block_until_waiters(1)
    clock.step(30.0)
    assert drained.join() is False


def test_shutdown_cancels_a_pending_drain():
    clock = FakeClock()
    q = Queue(clock=clock)
    q.add("a")
    q.get()
    drained = Call(q.shutdown_with_drain, 30.0)
    clock.block_until_waiters(1)
    q.shutdown()
    assert drained.join() is False


def test_a_readded_item_is_still_handed_out_during_a_drain():
    clock = FakeClock()
    q = Queue(clock=clock)
    q.add("a")
    item, _ = q.get()
    q.add("a")  # dirty while processing
    drained = Call(q.shutdown_with_drain, 30.0)
    clock.block_until_waiters(1)
    q.done(item)  # re-queued: adds before the shutdown are not lost
    assert q.get(timeout=0) == ("a", False)
    assert drained.alive()
    q.done("a")
    assert drained.join() is True
    assert q.get(timeout=0) == (None, True)


def test_repr_shows_name_and_state():
    q = Queue("foos")
    q.add("a")
    q.add("b")
    q.get()
    assert repr(q) == "<Queue 'foos' queued=1 processing=1>"
    q.shutdown()
    assert repr(q) == "<Queue 'foos' queued=1 processing=1 shutting-down>"
    assert repr(Queue()) == "<Queue queued=0 processing=0>"


# -- DelayingQueue ----------------------------------------------------------------------
@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def dq(clock):
    q = DelayingQueue("delayed", clock=clock, metrics_registry=CollectorRegistry())
    yield q
    q.shutdown()


# The delaying queue keeps time with one timer of its clock: a FakeClock runs it inside
# step(), so every test below checks the queue right after stepping, with no waiting.


def test_add_after_adds_the_item_exactly_when_its_delay_has_passed(dq, clock):
    dq.add_after("a", 10.0)
    assert clock.timer_count() == 1 and clock.next_timer_deadline() == clock.now() + 10.0
    clock.step(9.999)
    assert len(dq) == 0 and dq.waiting_count() == 1
    clock.step(0.001)
    assert dq.get(timeout=0) == ("a", False)
    assert dq.waiting_count() == 0 and clock.timer_count() == 0


def test_add_after_keeps_the_earliest_ready_time(dq, clock):
    start = clock.now()
    dq.add_after("a", 10.0)
    dq.add_after("a", 2.0)
    dq.add_after("a", 5.0)
    assert dq.waiting_count() == 1
    assert clock.timer_count() == 1 and clock.next_timer_deadline() == start + 2.0
    clock.step(2.0)
    assert drain(dq) == ["a"]
    assert dq.waiting_count() == 0
    clock.step(10.0)  # the superseded ready times add nothing
    assert len(dq) == 0


def test_a_later_add_after_does_not_postpone_a_waiting_item(dq, clock):
    dq.add_after("a", 2.0)
    dq.add_after("a", 50.0)
    clock.step(2.0)
    assert drain(dq) == ["a"]


def test_items_become_ready_in_ready_time_order_then_in_the_order_given(dq, clock):
    dq.add_after("late", 3.0)
    dq.add_after("early", 1.0)
    dq.add_after("tie-1", 2.0)
    dq.add_after("tie-2", 2.0)
    clock.step(5.0)
    assert drain(dq) == ["early", "tie-1", "tie-2", "late"]


def test_each_item_is_added_at_its_own_time_within_one_step(clock):
    seen: list[tuple[str, float]] = []

    class Recording(DelayingQueue):
        def add(self, item):
            seen.append((item, clock.now()))
            super().add(item)

    q = Recording(clock=clock)
    start = clock.now()
    q.add_after("a", 1.0)
    q.add_after("b", 4.0)
    clock.step(10.0)
    assert seen == [("a", start + 1.0), ("b", start + 4.0)]
    q.shutdown()


def test_an_earlier_item_rearms_the_one_timer(dq, clock):
    start = clock.now()
    dq.add_after("late", 100.0)
    assert clock.next_timer_deadline() == start + 100.0
    dq.add_after("soon", 1.0)
    assert clock.timer_count() == 1 and clock.next_timer_deadline() == start + 1.0
    clock.step(1.0)
    assert dq.get(timeout=0) == ("soon", False)
    assert clock.timer_count() == 1 and clock.next_timer_deadline() == start + 100.0


def test_a_zero_or_negative_delay_adds_at_once_without_a_timer(clock):
    q = DelayingQueue(clock=clock)
    q.add_after("a", 0)
    q.add_after("b", -1.0)
    assert drain(q) == ["a", "b"]
    assert clock.timer_count() == 0


def test_shutdown_cancels_the_timer_and_drops_waiting_items(dq, clock):
    dq.add_after("a", 1000.0)
    dq.shutdown()
    assert clock.timer_count() == 0 and dq.waiting_count() == 0
    clock.step(1000.0)
    assert len(dq) == 0


def test_shutdown_with_drain_also_cancels_the_timer(dq, clock):
    dq.add_after("a", 1000.0)
    assert dq.shutdown_with_drain(timeout=1.0) is True
    assert clock.timer_count() == 0 and dq.waiting_count() == 0


def test_add_after_is_ignored_after_shutdown(dq, clock):
    dq.shutdown()
    dq.add_after("a", 1.0)
    dq.add_after("b", 0)
    assert len(dq) == 0 and dq.waiting_count() == 0 and clock.timer_count() == 0


def test_a_delayed_item_already_queued_is_not_queued_twice(dq, clock):
    dq.add("a")
    dq.add_after("a", 1.0)
    clock.step(1.0)
    assert drain(dq) == ["a"]


def test_a_delaying_queue_on_the_real_clock_keeps_no_thread_of_its_own():
    q = DelayingQueue("real")
    try:
        before = {t.name for t in threading.enumerate()}
        for i in range(2000):
            q.add_after(i, 0.05 + (i % 7) * 0.001)
        started = {t.name for t in threading.enumerate()} - before
        assert started <= {"pyinformers-clock-timers"}
        got = [q.get(timeout=JOIN)[0] for _ in range(2000)]
        assert sorted(got) == list(range(2000))
        assert q.waiting_count() == 0
    finally:
        q.shutdown()


def test_delaying_repr_shows_waiting_items(dq, clock):
    dq.add_after("a", 1.0)
    dq.add_after("b", 2.0)
    dq.add("c")
    assert repr(dq) == "<DelayingQueue 'delayed' queued=1 processing=0 waiting=2>"


# -- RateLimitingQueue ------------------------------------------------------------------
def test_add_rate_limited_waits_the_delay_the_limiter_gives(clock):
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    try:
        q.add_rate_limited("a")  # 1 s
        q.add_rate_limited("a")  # 2 s, but the earlier ready time wins
        assert q.num_requeues("a") == 2
        clock.step(0.999)
        assert len(q) == 0
        clock.step(0.001)
        assert q.get(timeout=0) == ("a", False)
    finally:
        q.shutdown()


def test_forget_resets_the_items_backoff():
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), clock=FakeClock())
    try:
        for _ in range(3):
            q.add_rate_limited("a")
        assert q.num_requeues("a") == 3
        q.forget("a")
        assert q.num_requeues("a") == 0
        assert q.rate_limiter.when("a") == 1.0
    finally:
        q.shutdown()


def test_the_default_rate_limiter_runs_on_the_queues_clock(clock):
    q = RateLimitingQueue(clock=clock)
    try:
        assert isinstance(q.rate_limiter, MaxOfRateLimiter)
        for _ in range(100):  # the bucket's burst
            q.rate_limiter.when("x")
        bucket = q.rate_limiter.limiters[1]
        assert bucket.when("y") == pytest.approx(0.1)
        clock.step(10.0)  # the bucket refills on the fake clock
        assert bucket.when("y") == 0.0
    finally:
        q.shutdown()


def test_a_rate_limiting_queue_rejects_something_that_is_not_a_rate_limiter():
    with pytest.raises(ValueError, match="not a rate limiter"):
        RateLimitingQueue(object())


def test_rate_limiting_repr_matches_the_style_guide(clock):
    q = RateLimitingQueue(name="foos", clock=clock, metrics_registry=CollectorRegistry())
    try:
        for key in ["a", "b", "c", "d"]:
            q.add(key)
        q.get()
        q.add_after("x", 5.0)
        q.add_after("y", 5.0)
        assert repr(q) == "<RateLimitingQueue 'foos' queued=3 processing=1 waiting=2>"
    finally:
        q.shutdown()


# -- metrics ----------------------------------------------------------------------------
def sample(registry: CollectorRegistry, metric: str, name: str = "foos") -> float | None:
    return registry.get_sample_value(metric, {"name": name})


def test_an_unnamed_queue_records_nothing():
    registry = CollectorRegistry()
    q = Queue(metrics_registry=registry)
    q.add("a")
    assert q._metrics is None
    assert list(registry.collect()) == []


def test_a_named_queue_counts_adds_and_reports_depth():
    registry = CollectorRegistry()
    q = Queue("foos", clock=FakeClock(), metrics_registry=registry)
    q.add("a")
    q.add("a")
    q.add("b")
    assert sample(registry, "workqueue_adds_total") == 2
    assert sample(registry, "workqueue_depth") == 2
    item, _ = q.get()
    q.add(item)  # dirty again while processing: depth counts it
    assert sample(registry, "workqueue_depth") == 2
    assert sample(registry, "workqueue_adds_total") == 3


def test_a_named_queue_measures_queue_and_work_durations_on_its_clock():
    clock = FakeClock()
    registry = CollectorRegistry()
    q = Queue("foos", clock=clock, metrics_registry=registry)
    q.add("a")
    clock.step(2.0)
    item, _ = q.get()
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 2.0
    assert sample(registry, "workqueue_queue_duration_seconds_count") == 1
    clock.step(3.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 3.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 3.0
    q.done(item)
    assert sample(registry, "workqueue_work_duration_seconds_sum") == 3.0
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0.0


def test_unfinished_work_sums_ages_and_longest_takes_the_oldest():
    clock = FakeClock()
    registry = CollectorRegistry()
    q = Queue("foos", clock=clock, metrics_registry=registry)
    q.add("a")
    q.get()
    clock.step(4.0)
    q.add("b")
    q.get()
    clock.step(1.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 6.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 5.0


def test_retries_count_every_add_after():
    registry = CollectorRegistry()
    q = RateLimitingQueue(name="foos", clock=FakeClock(), metrics_registry=registry)
    try:
        q.add_rate_limited("a")
        q.add_after("b", 0)
        assert sample(registry, "workqueue_retries_total") == 2
    finally:
        q.shutdown()


def test_several_queues_share_one_registry_and_same_names_add_up():
    registry = CollectorRegistry()
    one = Queue("foos", metrics_registry=registry)
    two = Queue("foos", metrics_registry=registry)
    other = Queue("bars", metrics_registry=registry)
    one.add("a")
    two.add("a")
    two.add("b")
    other.add("z")
    assert sample(registry, "workqueue_depth") == 3
    assert sample(registry, "workqueue_adds_total") == 3
    assert sample(registry, "workqueue_depth", "bars") == 1


def test_a_queue_name_must_be_a_non_empty_string():
    with pytest.raises(ValueError, match="non-empty string"):
        Queue("", metrics_registry=CollectorRegistry())


def test_the_package_exports_each_public_name_once():
    import pyinformers.workqueue as workqueue

    assert len(workqueue.__all__) == len(set(workqueue.__all__))
    for name in workqueue.__all__:
        assert getattr(workqueue, name).__module__ == "pyinformers.workqueue"  # its public path


def test_durations_land_in_client_gos_buckets():
    clock = FakeClock()
    registry = CollectorRegistry()
    q = Queue("foos", clock=clock, metrics_registry=registry)
    q.add("a")
    clock.step(1.0)  # exactly a bucket bound: counted in le="1.0"
    q.get()
    bucket = "workqueue_queue_duration_seconds_bucket"
    assert registry.get_sample_value(bucket, {"name": "foos", "le": "0.1"}) == 0
    assert registry.get_sample_value(bucket, {"name": "foos", "le": "1.0"}) == 1
    assert registry.get_sample_value(bucket, {"name": "foos", "le": "+Inf"}) == 1


def test_counters_outlive_a_garbage_collected_queue():
    import gc

    registry = CollectorRegistry()
    q = Queue("foos", metrics_registry=registry)
    q.add("a")
    q.add("b")
    del q
    gc.collect()
    replacement = Queue("foos", metrics_registry=registry)
    replacement.add("c")
    assert sample(registry, "workqueue_adds_total") == 3
    assert sample(registry, "workqueue_depth") == 1  # gauges count live queues only


def test_collected_queues_are_retired_without_waiting_for_a_scrape():
    from pyinformers._metrics import collector_for
    from pyinformers.workqueue._metrics import _Collector

    registry = CollectorRegistry()
    for i in range(50):
        q = Queue("foos", metrics_registry=registry)
        q.add(i)
        del q  # the next queue's creation retires it
    assert len(collector_for(registry, _Collector)._live) == 1
    assert sample(registry, "workqueue_adds_total") == 50
    assert sample(registry, "workqueue_depth") == 0  # gauges count live queues only


def test_metrics_registry_false_keeps_a_named_queue_silent():
    q = Queue("foos", metrics_registry=False)
    q.add("a")
    assert q._metrics is None
    assert repr(q) == "<Queue 'foos' queued=1 processing=0>"


def test_histograms_stay_exact_across_bulk_folds_of_their_buffered_observations():
    from pyinformers.workqueue import _metrics as queue_metrics

    clock = FakeClock()
    registry = CollectorRegistry()
    q = Queue("folding", clock=clock, metrics_registry=registry)
    cycles = (
        queue_metrics.FOLD_AT * 2 + 7
    )  # two bulk folds on the hot path, the rest folded at scrape
    for i in range(cycles):
        q.add(i)
        clock.step(0.5 if i % 2 else 0.005)
        item, _ = q.get(0)
        q.done(item)
    assert sample(registry, "workqueue_queue_duration_seconds_count", "folding") == cycles
    slow = cycles // 2
    assert sample(registry, "workqueue_queue_duration_seconds_sum", "folding") == pytest.approx(
        slow * 0.5 + (cycles - slow) * 0.005
    )
    bucket = "workqueue_queue_duration_seconds_bucket"
    assert registry.get_sample_value(bucket, {"name": "folding", "le": "0.01"}) == cycles - slow
    assert registry.get_sample_value(bucket, {"name": "folding", "le": "1.0"}) == cycles
