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

Threading: the queue records into its :class:`QueueMetrics` (and calls
:meth:`~QueueMetrics.retry`) with its own lock held; collection may run on
any thread (it takes each queue's lock briefly). On a hot queue the cost is
dominated by the three clock reads per item (add, get, done), as in client-go.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
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


#: Observations a histogram buffers before it sorts them into buckets (see _Histogram).
_FOLD_AT = 4096
_bucket_of = functools.partial(bisect_left, DURATION_BUCKETS)


class _Histogram:
    """Bucket counts and a sum, not cumulative: ``counts[i]`` counts values in
    ``(DURATION_BUCKETS[i-1], DURATION_BUCKETS[i]]``; the last slot is +Inf.

    Observing appends to ``pending`` (one list append on the hot path); the
    values are sorted into ``counts`` and ``total`` in bulk (:meth:`fold`)
    when ``_FOLD_AT`` have accumulated and before anything reads the counts.
    Under the owning queue's lock, like every other recording.
    """

    __slots__ = ("counts", "total", "pending")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0
        self.pending: list[float] = []

    def observe(self, value: float) -> None:
        pending = self.pending
        pending.append(value)
        if len(pending) >= _FOLD_AT:
            self.fold()

    def fold(self) -> None:
        pending = self.pending
        if not pending:
            return
        counts = self.counts
        for bucket, n in collections.Counter(map(_bucket_of, pending)).items():
            counts[bucket] += n
        self.total += math.fsum(pending)
        pending.clear()

    def merge(self, other: "_Histogram") -> None:
        other.fold()
        for i, count in enumerate(other.counts):
            self.counts[i] += count
        self.total += other.total

    def copy(self) -> "_Histogram":
        self.fold()
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

    The owning :class:`~pyinformers.workqueue.Queue` records into these fields
    itself, inline in ``add``/``get``/``done`` under its lock: a method call per
    operation cost more than the recording (the ``Controller``'s queue must
    keep up with :class:`queue.Queue`). What each operation records:

    * ``add`` of an item that became waiting: ``counts.adds += 1`` and
      ``add_times[item] = now()``;
    * ``get``: ``queue_duration.observe(now - add_times.pop(item))`` and
      ``starts[item] = now``;
    * ``done``: ``work_duration.observe(now() - starts.pop(item))``.

    Invariants (under the queue's lock): ``add_times``' keys are a subset of
    the queue's dirty set; ``starts``' keys are its processing set.
    """

    __slots__ = ("name", "now", "counts", "add_times", "starts", "queue_duration", "work_duration",
                 "__weakref__")

    def __init__(self, cell: _Cell) -> None:
        self.name = cell.name
        self.now = cell.now
        self.counts = cell.counts
        self.queue_duration = cell.counts.queue_duration
        self.work_duration = cell.counts.work_duration
        self.starts = cell.starts
        self.add_times: dict[Hashable, float] = {}

    def retry(self) -> None:
        """An ``add_after`` (a retry); called with the queue's lock held."""
        self.counts.retries += 1


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
