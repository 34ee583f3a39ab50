"""Prometheus metrics of the work queues, named as client-go names them.

This module owns :class:`QueueMetrics`, the recorder a *named* queue creates
(unnamed queues have none, and their hot path pays one ``is None`` test),
and the collector that reports every recorder of a registry. Every series
carries the label ``name`` (the queue's name):

================================================  =========  ============================================
metric                                            type       meaning
================================================  =========  ============================================
``workqueue_depth``                               gauge      items waiting to be processed (the dirty dict)
``workqueue_adds_total``                          counter    adds that made an item waiting
``workqueue_queue_duration_seconds``              histogram  time from add to get
``workqueue_work_duration_seconds``               histogram  time from get to done
``workqueue_unfinished_work_seconds``             gauge      summed age of the work in progress
``workqueue_longest_running_processor_seconds``   gauge      age of the oldest work in progress
``workqueue_retries_total``                       counter    ``add_after`` calls (retries)
================================================  =========  ============================================

How it stays cheap: a named queue keeps the raw facts, under the lock it
already holds, and everything else is computed when a registry is scraped.

* Timestamps live in the queue's own state: its dirty dict maps an item to
  the time it was added, its processing dict to the time a worker took it.
  No extra dict operation per cycle.
* A duration is one list append; the buffered durations are sorted into
  histogram buckets in bulk (one C-level sort and a bisection per bound),
  every :data:`FOLD_AT` observations and at scrape time.
* ``workqueue_adds_total`` is not counted: an item leaves the dirty dict only
  through ``get``, which observes its queue duration, so the adds are the
  queue durations observed plus the items still dirty. The gauges (depth,
  unfinished work, longest-running processor) are read from the queue's
  dicts at scrape time: no ticker thread.

What a scrape reports equals what client-go's bookkeeping (a counter, gauges
and histograms updated on every operation) would report at that moment.

Queues sharing a name share series: counters and histograms add up, depth
and unfinished work add up, the longest-running processor takes the maximum.
When a queue is garbage-collected its counts are folded into its name's
totals, so counters never go backwards.

``prometheus_client`` refuses to register a metric name twice in one
registry, so the collector is created once per registry and cached here.

Threading: the queue records with its own lock held; a scrape may run on any
thread and takes each queue's lock briefly (it reads one consistent snapshot
per queue). Scrapes are serialised by the collector. A queue's finalizer
(which may run inside any thread's garbage collection, even one holding a
queue lock) takes no lock: it leaves a note that the next scrape, or the
next named queue created, acts on.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from pyinformers._metrics import collector_for
from pyinformers.clock import Clock
from pyinformers.workqueue._time import now_function

__all__ = ["QueueMetrics", "new_queue_metrics", "DURATION_BUCKETS", "FOLD_AT"]

#: Histogram buckets of client-go's queue metrics: 10 ns to 10 s, by factors of ten.
DURATION_BUCKETS: tuple[float, ...] = tuple(10.0**exponent for exponent in range(-8, 2))

_LABELS = ("name",)


#: Observations a queue buffers before it sorts them into buckets (see _Histogram).
#: Sorting small batches is cheaper per value (fewer comparisons, warm caches).
FOLD_AT = 256


class _Histogram:
    """Bucket counts and a sum, not cumulative: ``counts[i]`` counts values in
    ``(DURATION_BUCKETS[i-1], DURATION_BUCKETS[i]]``; the last slot is +Inf.

    Observing is one append to ``pending`` (the queue does it inline); the
    values are sorted into ``counts`` and ``total`` in bulk (:meth:`fold`):
    one C-level sort, then one bisection per bucket bound. The owning queue
    folds when ``FOLD_AT`` observations have accumulated, and the collector
    before it reads the counts. Guarded by the owning queue's lock.
    """

    __slots__ = ("counts", "total", "pending")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0
        self.pending: list[float] = []

    def fold(self) -> None:
        pending = self.pending
        if not pending:
            return
        pending.sort()
        counts = self.counts
        # Only the bounds between the smallest and the largest value split the batch.
        first = bisect_left(DURATION_BUCKETS, pending[0])
        last = bisect_left(DURATION_BUCKETS, pending[-1])
        below = 0
        for i in range(first, last):
            upto = bisect_right(pending, DURATION_BUCKETS[i], below)  # values <= the bound
            counts[i] += upto - below
            below = upto
        counts[last] += len(pending) - below
        self.total += sum(pending)
        pending.clear()

    def count(self) -> int:
        """How many values were observed (folded ones; call :meth:`fold` first)."""
        return sum(self.counts)

    def merge(self, other: _Histogram) -> None:
        other.fold()
        for i, count in enumerate(other.counts):
            self.counts[i] += count
        self.total += other.total

    def family_buckets(self) -> list[tuple[str, float]]:
        cumulative = list(itertools.accumulate(self.counts))
        bounds = [floatToGoString(bound) for bound in DURATION_BUCKETS] + ["+Inf"]  # type: ignore[no-untyped-call]
        return list(zip(bounds, cumulative))


class _Counts:
    """A name's monotonic numbers: what survives a queue, folded into its name's totals."""

    __slots__ = ("adds", "retries", "queue_duration", "work_duration")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.queue_duration = _Histogram()
        self.work_duration = _Histogram()

    def merge(self, other: _Counts) -> None:
        self.adds += other.adds
        self.retries += other.retries
        self.queue_duration.merge(other.queue_duration)
        self.work_duration.merge(other.work_duration)


class _Cell:
    """What the collector reads of one live queue. Holds no reference to the
    queue or its recorder, so it does not keep them alive.

    The queue's ``dirty`` and ``processing`` dicts carry the timestamps:
    ``dirty[item]`` is the clock time the item was added (became waiting),
    ``processing[item]`` the time a worker took it. Items leave ``dirty``
    only through ``get``, and every ``get`` observes one queue duration, so
    ``workqueue_adds_total`` needs no counter of its own: it is the number of
    queue durations observed plus the items still in ``dirty``.
    """

    __slots__ = ("name", "lock", "dirty", "processing", "counts", "now")

    def __init__(
        self, name: str, lock: threading.Lock, dirty: dict, processing: dict, now: Any
    ) -> None:
        self.name = name
        self.lock = lock  # the queue's lock: guards dirty, processing and counts
        self.dirty = dirty
        self.processing = processing
        self.counts = _Counts()  # adds stays 0 here: see above
        self.now = now

    def snapshot(self) -> tuple[int, list[float], _Counts]:
        """Depth, the start times of the work in progress, and the counts so far (adds included)."""
        with self.lock:
            counts = _Counts()
            counts.merge(self.counts)
            counts.adds = counts.queue_duration.count() + len(self.dirty)
            return len(self.dirty), list(self.processing.values()), counts


class QueueMetrics:
    """What one named queue records. Create with :func:`new_queue_metrics`.

    The owning :class:`~pyinformers.workqueue.Queue` records inline in
    ``add``/``get``/``done`` under its lock (a method call per operation
    would cost more than the recording: the ``Controller``'s queue must keep
    up with :class:`queue.Queue`):

    * ``add`` of an item that became waiting stores ``now()`` as the item's
      value in the queue's dirty dict;
    * ``get`` stores ``now()`` as its value in the processing dict, appends
      ``now - added`` to ``waits`` and calls :meth:`fold` once ``waits``
      holds ``FOLD_AT`` values;
    * ``done`` appends ``now() - started`` to ``works``.

    Invariant (under the queue's lock): each done follows its get, so
    ``works`` never holds more values than ``waits`` plus the items that were
    being processed at the last fold; folding both on ``waits``' length
    bounds both buffers.
    """

    __slots__ = ("name", "now", "waits", "works", "_counts", "__weakref__")

    def __init__(self, cell: _Cell) -> None:
        self.name = cell.name
        self.now = cell.now
        self._counts = cell.counts
        self.waits = cell.counts.queue_duration.pending
        self.works = cell.counts.work_duration.pending

    def fold(self) -> None:
        """Sort the buffered durations into their histograms; called with the queue's lock held."""
        self._counts.queue_duration.fold()
        self._counts.work_duration.fold()

    def retry(self) -> None:
        """An ``add_after`` (a retry); called with the queue's lock held."""
        self._counts.retries += 1


class _Collector:
    """Reports every named queue of one registry, live or gone."""

    def __init__(self) -> None:
        # Serialises scrapes; held while reading cells (so taking queue locks after it).
        self._collect_lock = threading.Lock()
        # Guards _live; never held while taking another lock.
        self._lock = threading.Lock()
        # token -> cell of a queue, until a scrape after the queue's death retires it.
        self._live: dict[int, _Cell] = {}
        # Tokens of queues that were garbage-collected; appended by finalizers
        # (atomic, lock-free), drained by the next scrape.
        self._dead: list[int] = []
        # name -> counts of the queues of that name that were garbage-collected.
        # Touched only by collect(), under _collect_lock.
        self._retired: dict[str, _Counts] = {}
        self._tokens = itertools.count()

    def track(self, metrics: QueueMetrics, cell: _Cell) -> None:
        token = next(self._tokens)
        with self._lock:
            self._live[token] = cell
        weakref.finalize(metrics, self._dead.append, token)
        # Retire collected queues here too, so that a process that creates queues but is
        # never scraped does not keep their cells; a scrape in progress will do it instead.
        if self._dead and self._collect_lock.acquire(blocking=False):
            try:
                self._retire_dead()
            finally:
                self._collect_lock.release()

    def _retire_dead(self) -> None:
        """Fold the counts of collected queues into their names' totals (under _collect_lock)."""
        dead = self._dead
        while dead:
            token = dead.pop()
            with self._lock:
                cell = self._live.pop(token, None)
            if cell is not None:  # nobody records into it any more; its lock is free
                self._retired.setdefault(cell.name, _Counts()).merge(cell.snapshot()[2])

    def _families(self) -> dict[str, Any]:
        return {
            "depth": GaugeMetricFamily(
                "workqueue_depth", "Current depth of workqueue", labels=_LABELS
            ),
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
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
                labels=_LABELS,
            ),
        }

    def describe(self) -> Iterator[Any]:
        return iter(self._families().values())

    def collect(self) -> Iterator[Any]:
        with self._collect_lock:
            self._retire_dead()
            with self._lock:
                cells = list(self._live.values())
            totals: dict[str, _Counts] = {}
            for name, retired in self._retired.items():
                totals[name] = _Counts()
                totals[name].merge(retired)
            depth: dict[str, int] = {}
            unfinished: dict[str, float] = {}
            longest: dict[str, float] = {}
            for cell in cells:
                queued, starts, counts = cell.snapshot()
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
    dirty: dict,
    processing: dict,
    clock: Clock,
    registry: Any | None = None,
) -> QueueMetrics:
    """The recorder for a queue called ``name`` reporting to ``registry`` (default: the global one).

    ``lock`` is the queue's lock; ``dirty`` and ``processing`` are its dicts of
    waiting and processing items, whose values the queue sets to their add and
    start times (read under the lock at scrape time, see :class:`_Cell`).
    Raises ValueError when ``name`` is empty or ``registry`` already holds
    workqueue metrics registered elsewhere.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a queue's metrics name must be a non-empty string, got {name!r}")
    collector = collector_for(REGISTRY if registry is None else registry, _Collector)
    cell = _Cell(name, lock, dirty, processing, now_function(clock))
    metrics = QueueMetrics(cell)
    collector.track(metrics, cell)
    return metrics
