"""Scraped queue metrics against client-go's bookkeeping (hypothesis), and scrapes racing the queue.

A named queue keeps raw timestamps and buffered durations and computes its
metrics when scraped (see :mod:`pyinformers.workqueue._metrics`).
:class:`ClientGoMetrics` is the reference: client-go's ``defaultQueueMetrics``
on prometheus-client's own ``Counter``, ``Gauge`` and ``Histogram``, updated
on every operation. :class:`MetricsMachine` drives a named delaying queue
through the model of test_workqueue_stateful (adds, gets, dones, delayed and
immediate retries, clock steps, shutdown), plus steps across bucket bounds and
the replacement of the queue by a new one of the same name, and asserts after
every step that both registries report the same samples.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from pyinformers.clock import FakeClock
from pyinformers.workqueue import DelayingQueue, Queue
from pyinformers.workqueue import _queue as queue_module
from pyinformers.workqueue._metrics import DURATION_BUCKETS, _Histogram
from tests.workqueue.test_stateful import DelayingQueueMachine

NAME = "model"
# Steps that land exactly on bucket bounds, between them, and past the last one.
STEPS = st.sampled_from([0.0, 1e-8, 1e-7, 3e-7, 1e-6, 1e-5, 1e-3, 0.25, 1.0, 10.0, 12.5])


class ClientGoMetrics:
    """client-go's queue metrics, kept the way client-go keeps them (reference model)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.registry = CollectorRegistry()
        labels = ["name"]
        registry = self.registry
        self.depth = Gauge("workqueue_depth", "", labels, registry=registry).labels(NAME)
        self.adds = Counter("workqueue_adds", "", labels, registry=registry).labels(NAME)
        self.latency = Histogram(
            "workqueue_queue_duration_seconds",
            "",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        ).labels(NAME)
        self.work = Histogram(
            "workqueue_work_duration_seconds",
            "",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        ).labels(NAME)
        self.unfinished = Gauge(
            "workqueue_unfinished_work_seconds", "", labels, registry=registry
        ).labels(NAME)
        self.longest = Gauge(
            "workqueue_longest_running_processor_seconds", "", labels, registry=registry
        ).labels(NAME)
        self.retries = Counter("workqueue_retries", "", labels, registry=registry).labels(NAME)
        self.add_times: dict = {}
        self.processing_start_times: dict = {}

    # What client-go's queue calls, when it calls it.
    def add(self, item, at=None) -> None:
        self.adds.inc()
        self.depth.inc()
        self.add_times.setdefault(item, self.clock.now() if at is None else at)

    def get(self, item) -> None:
        self.depth.dec()
        now = self.clock.now()
        if item in self.add_times:
            self.latency.observe(now - self.add_times.pop(item))
        self.processing_start_times[item] = now

    def done(self, item) -> None:
        if item in self.processing_start_times:
            self.work.observe(self.clock.now() - self.processing_start_times.pop(item))

    def retry(self) -> None:
        self.retries.inc()

    def queue_replaced(self, dirty: int) -> None:
        """Gauges count live queues only; counters and histograms keep their totals."""
        self.depth.dec(dirty)
        self.add_times.clear()
        self.processing_start_times.clear()

    def update_unfinished_work(self) -> None:
        """client-go's ticker; run here right before each scrape."""
        now = self.clock.now()
        ages = [now - start for start in self.processing_start_times.values()]
        self.unfinished.set(sum(ages))
        self.longest.set(max(ages, default=0.0))


def samples(registry: CollectorRegistry) -> dict:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry.collect()
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


class MetricsMachine(DelayingQueueMachine):
    """The delaying queue's model (test_workqueue_stateful), on a named queue whose
    scrapes must match :class:`ClientGoMetrics` fed with the model's transitions."""

    def __init__(self) -> None:
        super().__init__()
        self.queue.shutdown()  # the unnamed one the model made; this machine's is named
        self.registry = CollectorRegistry()
        self.queue = DelayingQueue(NAME, clock=self.clock, metrics_registry=self.registry)
        self.reference = ClientGoMetrics(self.clock)

    def became_dirty(self, item, at) -> None:
        self.reference.add(item, at)

    def handed_out(self, item) -> None:
        self.reference.get(item)

    def finished(self, item) -> None:
        self.reference.done(item)

    def retried(self, item) -> None:
        self.reference.retry()

    @rule(seconds=STEPS)
    def step_across_bucket_bounds(self, seconds):
        self.step(seconds)

    def teardown(self):
        self.scrapes_match_client_gos_bookkeeping()
        super().teardown()

    @rule()
    def replace_the_queue(self):
        """The queue is dropped (garbage-collected) and a new one of the same name takes over."""
        self.queue.shutdown()
        self.queue = DelayingQueue(NAME, clock=self.clock, metrics_registry=self.registry)
        self.reference.queue_replaced(len(self.dirty))
        self.order, self.dirty, self.processing, self.waiting, self.shut = (
            [],
            set(),
            set(),
            {},
            False,
        )

    # A rule, not an invariant: between scrapes the queue buffers several durations, so that
    # folds sort batches spanning several buckets.
    @rule()
    def scrapes_match_client_gos_bookkeeping(self):
        self.reference.update_unfinished_work()
        ours, expected = samples(self.registry), samples(self.reference.registry)
        assert ours.keys() == expected.keys()
        for key, value in expected.items():
            if key[0].endswith("_sum") or key[0].endswith("_seconds"):
                assert ours[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
            else:
                assert ours[key] == value, key


@given(
    values=st.lists(
        st.one_of(st.sampled_from(DURATION_BUCKETS), st.floats(0.0, 20.0)), max_size=40
    ),
    cuts=st.lists(st.integers(0, 40), max_size=5),
)
def test_folding_batches_buckets_values_as_prometheus_client_does(values, cuts):
    histogram = _Histogram()
    reference = Histogram("h", "", buckets=DURATION_BUCKETS, registry=CollectorRegistry())
    bounds = sorted({0, len(values), *(cut for cut in cuts if cut <= len(values))})
    for start, end in zip(bounds, bounds[1:]):
        histogram.pending.extend(values[start:end])
        histogram.fold()
    for value in values:
        reference.observe(value)
    expected = {
        s.labels["le"]: s.value for s in reference.collect()[0].samples if s.name == "h_bucket"
    }
    assert dict(histogram.family_buckets()) == expected
    assert histogram.total == pytest.approx(sum(values), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("fold_at", [2, queue_module._FOLD_AT], ids=["folding-often", "default"])
def test_scraped_metrics_equal_client_gos_bookkeeping(monkeypatch, fold_at):
    # A small fold threshold makes the hot path fold buffered durations between scrapes.
    monkeypatch.setattr(queue_module, "_FOLD_AT", fold_at)
    run_state_machine_as_test(
        MetricsMachine, settings=settings(max_examples=150, stateful_step_count=40, deadline=None)
    )


def test_scrapes_racing_adds_gets_and_dones_see_consistent_counts():
    registry = CollectorRegistry()
    q = Queue("racing", metrics_registry=registry)
    producers, per_producer = 2, 3000
    done_count = 0
    stop_scraping = threading.Event()
    problems: list = []
    scrapes: list = []

    def produce(n: int) -> None:
        for i in range(per_producer):
            q.add(f"{n}-{i % 50}")  # repeats: some adds find the key waiting or in processing

    def consume() -> None:
        nonlocal done_count
        while True:
            item, shutting_down = q.get()
            if shutting_down:
                return
            q.done(item)
            done_count += 1

    def scrape() -> None:
        last_gets = 0.0
        while True:
            finished = stop_scraping.is_set()  # one more scrape after the end
            got = samples(registry)
            key = (("name", "racing"),)
            adds = got[("workqueue_adds_total", key)]
            depth = got[("workqueue_depth", key)]
            gets = got[("workqueue_queue_duration_seconds_count", key)]
            dones = got[("workqueue_work_duration_seconds_count", key)]
            inf = got[("workqueue_queue_duration_seconds_bucket", (("le", "+Inf"),) + key)]
            # One snapshot per queue: every add is either still waiting or was handed out.
            if adds != gets + depth or inf != gets or dones > gets or gets < last_gets:
                problems.append((adds, depth, gets, dones, inf, last_gets))
            last_gets = gets
            scrapes.append(gets)
            if finished:
                return

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(producers)]
    consumer = threading.Thread(target=consume)
    scraper = threading.Thread(target=scrape)
    for thread in [consumer, scraper, *threads]:
        thread.start()
    for thread in threads:
        thread.join()
    q.shutdown()
    consumer.join()
    stop_scraping.set()
    scraper.join()

    assert problems == []
    assert len(scrapes) >= 2 and scrapes[-1] == done_count
    final = samples(registry)
    key = (("name", "racing"),)
    assert final[("workqueue_queue_duration_seconds_count", key)] == done_count
    assert final[("workqueue_work_duration_seconds_count", key)] == done_count
    assert final[("workqueue_adds_total", key)] == done_count + final[("workqueue_depth", key)]
    assert final[("workqueue_depth", key)] == 0
    assert final[("workqueue_unfinished_work_seconds", key)] == 0.0
