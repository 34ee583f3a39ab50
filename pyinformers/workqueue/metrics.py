"""Prometheus metrics of the work queues, named as client-go names them.

This module owns :class:`QueueMetrics`, the recorder a *named* queue creates
(unnamed queues have none, and their hot path pays one ``is None`` test),
and the collector that reports every recorder of a registry. Every series
carries the label ``name`` (the queue's name):

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

How it stays cheap: a recorder keeps plain counters and histogram bucket
counts, updated under the queue's own lock, which the queue already holds
when it records (a ``prometheus_client`` Counter or Histogram would take a
lock of its own for every observation, several microseconds a cycle). One
collector per registry turns them into metric families when the registry is
scraped, and computes the gauges then: no ticker thread.

Queues sharing a name share series: counters and histograms add up, depth
and unfinished work add up, the longest-running processor takes the maximum.
When a queue is garbage-collected its counts are folded into its name's
totals, so counters never go backwards.

``prometheus_client`` refuses to register a metric name twice in one
registry, so the collector is created once per registry and cached here.

Threading: :meth:`QueueMetrics.add`, :meth:`~QueueMetrics.get`,
:meth:`~QueueMetrics.done` and :meth:`~QueueMetrics.retry` are called with
the owning queue's lock held and rely on it; collection may run on any
thread (it takes each queue's lock briefly).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from bisect import bisect_left
from collections.abc import Hashable, Iterator
from typing import Any, Optional

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from pyinformers.clock import Clock
from pyinformers.metrics import collector_for
from pyinformers.workqueue._time import now_function

__all__ = ["QueueMetrics", "new_queue_metrics", "DURATION_BUCKETS"]

#: Histogram buckets of client-go's queue metrics: 10 ns to 10 s, by factors of ten.
DURATION_BUCKETS: tuple[float, ...] = tuple(10.0**exponent for exponent in range(-8, 2))

_LABELS = ("name",)


class _Histogram:
    """Bucket counts and a sum, not cumulative: ``counts[i]`` counts values in
    ``(DURATION_BUCKETS[i-1], DURATION_BUCKETS[i]]``; the last slot is +Inf."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, value)] += 1
        self.total += value

    def merge(self, other: "_Histogram") -> None:
        for i, count in enumerate(other.counts):
            self.counts[i] += count
        self.total += other.total

    def copy(self) -> "_Histogram":
        clone = _Histogram()
        clone.counts = list(self.counts)
        clone.total = self.total
        return clone

    def family_buckets(self) -> list[tuple[str, float]]:
        cumulative = list(itertools.accumulate(self.counts))
        bounds = [floatToGoString(bound) for bound in DURATION_BUCKETS] + ["+Inf"]  # type: ignore[no-untyped-call]
        return list(zip(bounds, cumulative))


class _Counts:
    """A queue's monotonic numbers: what survives the queue, folded into its name."""

    __slots__ = ("adds", "retries", "queue_duration", "work_duration")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.queue_duration = _Histogram()
        self.work_duration = _Histogram()

    def merge(self, other: "_Counts") -> None:
        self.adds += other.adds
        self.retries += other.retries
        self.queue_duration.merge(other.queue_duration)
        self.work_duration.merge(other.work_duration)

    def copy(self) -> "_Counts":
        clone = _Counts()
        clone.merge(self)
        return clone


class _Cell:
    """What the collector reads of one live queue. Holds no reference to the
    queue or its recorder, so it does not keep them alive."""

    __slots__ = ("name", "lock", "dirty", "starts", "counts", "now")

    def __init__(self, name: str, lock: threading.Lock, dirty: set, now: Any) -> None:
        self.name = name
        self.lock = lock  # the queue's lock: guards dirty, starts and counts
        self.dirty = dirty
        # item -> clock time a worker took it; popped by done().
        # Invariant (under lock): keys are exactly the queue's processing set.
        self.starts: dict[Hashable, float] = {}
        self.counts = _Counts()
        self.now = now

    def sample(self) -> tuple[int, list[float], _Counts]:
        with self.lock:
            return len(self.dirty), list(self.starts.values()), self.counts.copy()


class QueueMetrics:
    """What one named queue records. Create with :func:`new_queue_metrics`.

    Every recording method is called with the queue's lock held.
    """

    def __init__(self, cell: _Cell) -> None:
        self.name = cell.name
        self._cell = cell
        self._now = cell.now
        self._counts = cell.counts
        self._starts = cell.starts
        # item -> clock time it was added (became dirty); popped by get().
        # Invariant (under lock): keys are a subset of the queue's dirty set.
        self._add_times: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        self._counts.adds += 1
        if item not in self._add_times:
            self._add_times[item] = self._now()

    def get(self, item: Hashable) -> None:
        now = self._now()
        added = self._add_times.pop(item, None)
        if added is not None:
            self._counts.queue_duration.observe(now - added)
        self._starts[item] = now

    def done(self, item: Hashable) -> None:
        started = self._starts.pop(item, None)
        if started is not None:
            self._counts.work_duration.observe(self._now() - started)

    def retry(self) -> None:
        self._counts.retries += 1


class _Collector:
    """Reports every named queue of one registry, live or gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # token -> cell of a live queue; a queue's finalizer moves it to _retired.
        self._live: dict[int, _Cell] = {}
        # name -> counts of the queues of that name that were garbage-collected.
        self._retired: dict[str, _Counts] = {}
        self._tokens = itertools.count()

    def track(self, metrics: QueueMetrics, cell: _Cell) -> None:
        token = next(self._tokens)
        with self._lock:
            self._live[token] = cell
        weakref.finalize(metrics, self._retire, token)

    def _retire(self, token: int) -> None:
        with self._lock:
            cell = self._live.pop(token, None)
            if cell is not None:  # the queue is gone: nobody else touches its counts
                self._retired.setdefault(cell.name, _Counts()).merge(cell.counts)

    def _families(self) -> dict[str, Any]:
        return {
            "depth": GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=_LABELS),
            "adds": CounterMetricFamily(
                "workqueue_adds_total", "Total number of adds handled by workqueue", labels=_LABELS
            ),
            "queue_duration": HistogramMetricFamily(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested.",
                labels=_LABELS,
            ),
            "work_duration": HistogramMetricFamily(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
                labels=_LABELS,
            ),
            "unfinished": GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been "
                "observed by work_duration. Large values indicate stuck threads.",
                labels=_LABELS,
            ),
            "longest": GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                labels=_LABELS,
            ),
            "retries": CounterMetricFamily(
                "workqueue_retries_total", "Total number of retries handled by workqueue", labels=_LABELS
            ),
        }

    def describe(self) -> Iterator[Any]:
        return iter(self._families().values())

    def collect(self) -> Iterator[Any]:
        with self._lock:
            cells = list(self._live.values())
            totals = {name: counts.copy() for name, counts in self._retired.items()}
        depth: dict[str, int] = {}
        unfinished: dict[str, float] = {}
        longest: dict[str, float] = {}
        for cell in cells:
            queued, starts, counts = cell.sample()
            now = cell.now()
            ages = [max(0.0, now - start) for start in starts]
            name = cell.name
            totals.setdefault(name, _Counts()).merge(counts)
            depth[name] = depth.get(name, 0) + queued
            unfinished[name] = unfinished.get(name, 0.0) + sum(ages)
            longest[name] = max(longest.get(name, 0.0), max(ages, default=0.0))
        families = self._families()
        for name in sorted(totals):
            counts = totals[name]
            families["depth"].add_metric([name], depth.get(name, 0))
            families["adds"].add_metric([name], counts.adds)
            families["queue_duration"].add_metric(
                [name], counts.queue_duration.family_buckets(), counts.queue_duration.total
            )
            families["work_duration"].add_metric(
                [name], counts.work_duration.family_buckets(), counts.work_duration.total
            )
            families["unfinished"].add_metric([name], unfinished.get(name, 0.0))
            families["longest"].add_metric([name], longest.get(name, 0.0))
            families["retries"].add_metric([name], counts.retries)
        return iter(families.values())




def new_queue_metrics(
    name: str,
    *,
    lock: threading.Lock,
    dirty: set,
    clock: Clock,
    registry: Optional[Any] = None,
) -> QueueMetrics:
    """The recorder for a queue called ``name`` reporting to ``registry`` (default: the global one).

    ``lock`` is the queue's lock and ``dirty`` its dirty set (read, under the
    lock, for ``workqueue_depth``). Raises ValueError when ``name`` is empty
    or ``registry`` already holds workqueue metrics registered elsewhere.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a queue's metrics name must be a non-empty string, got {name!r}")
    collector = collector_for(REGISTRY if registry is None else registry, _Collector)
    cell = _Cell(name, lock, dirty, now_function(clock))
    metrics = QueueMetrics(cell)
    collector.track(metrics, cell)
    return metrics
