"""Prometheus metrics of the work queues, named as client-go names them.

This module owns the metric families and :class:`QueueMetrics`, the
per-queue recorder a *named* queue creates (unnamed queues have none, and
their hot path pays one ``is None`` test). Every series carries the label
``name`` (the queue's name):

================================================  =========  ============================================
metric                                            type       meaning
================================================  =========  ============================================
``workqueue_depth``                               gauge      items waiting to be processed (the dirty set)
``workqueue_adds_total``                          counter    adds that made an item waiting
``workqueue_queue_duration_seconds``              histogram  time from add to get
``workqueue_work_duration_seconds``               histogram  time from get to done
``workqueue_unfinished_work_seconds``             gauge      summed age of the work in progress
``workqueue_longest_running_processor_seconds``   gauge      age of the oldest work in progress
``workqueue_retries_total``                       counter    ``add_after`` calls (retries)
================================================  =========  ============================================

The counters and histograms are ordinary ``prometheus_client`` metrics. The
three gauges are computed when the registry is scraped, by one collector per
registry that asks every live queue for its state: no ticker thread, and no
cost on the hot path. Queues sharing a name share series: the gauges are
summed (the longest-running one takes the maximum).

``prometheus_client`` refuses to register a metric name twice in one
registry, so the families are created once per registry and cached here.

Threading: :meth:`QueueMetrics.add`, :meth:`~QueueMetrics.get` and
:meth:`~QueueMetrics.done` are called with the owning queue's lock held and
rely on it; :meth:`~QueueMetrics.retry` and collection may run on any thread.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Iterator
from typing import Any, Optional

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from pyinformers.clock import Clock
from pyinformers.workqueue._time import now_function

__all__ = ["QueueMetrics", "new_queue_metrics", "DURATION_BUCKETS"]

#: Histogram buckets of client-go's queue metrics: 10 ns to 10 s, by factors of ten.
DURATION_BUCKETS: tuple[float, ...] = tuple(10.0 ** exponent for exponent in range(-8, 2))

_LABELS = ("name",)


class QueueMetrics:
    """What one named queue records. Create with :func:`new_queue_metrics`.

    ``lock`` is the queue's lock: it guards ``dirty`` (the queue's dirty set,
    read for ``workqueue_depth``) and this object's two timestamp maps.
    """

    def __init__(
        self,
        name: str,
        families: "_Families",
        *,
        lock: threading.Lock,
        dirty: set,
        clock: Clock,
    ) -> None:
        self.name = name
        self._lock = lock
        self._dirty = dirty
        self._clock = clock
        self._now = now_function(clock)
        # item -> clock time it was added (became dirty); popped by get().
        # Invariant (under lock): keys are a subset of the queue's dirty set.
        self._add_times: dict[Hashable, float] = {}
        # item -> clock time a worker took it; popped by done().
        # Invariant (under lock): keys are exactly the queue's processing set.
        self._processing_starts: dict[Hashable, float] = {}
        self._adds = families.adds.labels(name)
        self._retries = families.retries.labels(name)
        self._queue_duration = families.queue_duration.labels(name)
        self._work_duration = families.work_duration.labels(name)

    # Called with the queue lock held.
    def add(self, item: Hashable) -> None:
        self._adds.inc()
        if item not in self._add_times:
            self._add_times[item] = self._now()

    def get(self, item: Hashable) -> None:
        now = self._now()
        added = self._add_times.pop(item, None)
        if added is not None:
            self._queue_duration.observe(now - added)
        self._processing_starts[item] = now

    def done(self, item: Hashable) -> None:
        started = self._processing_starts.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._now() - started)

    # Any thread.
    def retry(self) -> None:
        self._retries.inc()

    def sample(self) -> tuple[int, float, float]:
        """``(depth, unfinished work seconds, longest running seconds)`` right now."""
        with self._lock:
            depth = len(self._dirty)
            starts = list(self._processing_starts.values())
        now = self._clock.now()
        ages = [max(0.0, now - start) for start in starts]
        return depth, sum(ages), max(ages, default=0.0)


class _GaugeCollector:
    """Computes the three gauges of every live named queue at scrape time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: "weakref.WeakSet[QueueMetrics]" = weakref.WeakSet()

    def track(self, metrics: QueueMetrics) -> None:
        with self._lock:
            self._queues.add(metrics)

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=_LABELS),
            GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been "
                "observed by work_duration. Large values indicate stuck threads.",
                labels=_LABELS,
            ),
            GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                labels=_LABELS,
            ),
        )

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(self._families())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            queues = list(self._queues)
        by_name: dict[str, list[float]] = {}
        for metrics in queues:
            depth, unfinished, longest = metrics.sample()
            totals = by_name.setdefault(metrics.name, [0, 0.0, 0.0])
            totals[0] += depth
            totals[1] += unfinished
            totals[2] = max(totals[2], longest)
        depth_f, unfinished_f, longest_f = self._families()
        for name in sorted(by_name):
            depth, unfinished, longest = by_name[name]
            depth_f.add_metric([name], depth)
            unfinished_f.add_metric([name], unfinished)
            longest_f.add_metric([name], longest)
        return iter((depth_f, unfinished_f, longest_f))


class _Families:
    """The metric families of one registry (created once per registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", _LABELS, registry=registry
        )
        self.retries = Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", _LABELS, registry=registry
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.gauges = _GaugeCollector()
        registry.register(self.gauges)


_families_lock = threading.Lock()
_families_by_registry: "weakref.WeakKeyDictionary[CollectorRegistry, _Families]" = weakref.WeakKeyDictionary()


def _families_for(registry: CollectorRegistry) -> _Families:
    with _families_lock:
        families = _families_by_registry.get(registry)
        if families is None:
            families = _Families(registry)
            _families_by_registry[registry] = families
        return families


def new_queue_metrics(
    name: str,
    *,
    lock: threading.Lock,
    dirty: set,
    clock: Clock,
    registry: Optional[Any] = None,
) -> QueueMetrics:
    """The recorder for a queue called ``name`` reporting to ``registry`` (default: the global one).

    Raises ValueError when ``registry`` already holds workqueue metrics that
    were not registered by this module.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a queue's metrics name must be a non-empty string, got {name!r}")
    registry = REGISTRY if registry is None else registry
    families = _families_for(registry)
    metrics = QueueMetrics(name, families, lock=lock, dirty=dirty, clock=clock)
    families.gauges.track(metrics)
    return metrics
