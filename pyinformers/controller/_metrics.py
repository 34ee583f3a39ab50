"""Prometheus metrics of controllers, named as controller-runtime names them.

Every series carries the label ``controller`` (the controller's name):

===============================================  =========  =============================================
metric                                           type       meaning
===============================================  =========  =============================================
``controller_runtime_reconcile_total``           counter    reconciles, by ``result``: ``success``,
                                                            ``error``, ``requeue``, ``requeue_after``
``controller_runtime_reconcile_errors_total``    counter    reconciles that raised
``controller_runtime_reconcile_time_seconds``    histogram  how long each reconcile took (any result)
``controller_runtime_active_workers``            gauge      workers inside a reconcile right now
``controller_runtime_max_concurrent_reconciles`` gauge      the controller's worker count
``controller_runtime_terminal_reconcile_errors`` counter    reconciles that raised ``TerminalError``
``_total``                                                  (not retried; also counted as errors)
``pyinformers_controller_reconcile_deadline_``   counter    reconciles that ran past
``exceeded_total``                                          ``reconcile_deadline`` (each counted once)
``pyinformers_controller_reconciles_over_``      gauge      reconciles running past it right now
``deadline``
``pyinformers_controller_stale_read_``           counter    reconciles held back because the cache had
``deferrals_total``                                         not yet seen the key's own last write
``pyinformers_controller_stale_read_``           counter    keys reconciled after ``consistency_timeout``
``timeouts_total``                                          although the cache had not caught up
``pyinformers_controller_stale_read_``           gauge      keys with writes the cache has not shown yet
``tracked_keys``
===============================================  =========  =============================================

The controller's work queue reports the client-go work-queue metrics
(``workqueue_*``) under the controller's name, in the same registry.

How: a reconcile must not pay for half a dozen prometheus-client calls (each
takes a lock and validates its input). :class:`ControllerMetrics` keeps plain
numbers under one lock -- two short critical sections per reconcile -- and
one collector per registry turns every live controller's numbers into metric
families when the registry is scraped. Controllers sharing a name (in one
registry) share series: their numbers are summed. A controller's series
exist, at zero, from the moment it is created.

Threading: every method may be called from any thread.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from pyinformers._metrics import LiveSet, collector_for, resolve_registry

__all__ = ["ControllerMetrics", "RECONCILE_TIME_BUCKETS", "RESULTS"]

#: The values of the ``result`` label of ``controller_runtime_reconcile_total``.
RESULTS: tuple[str, ...] = ("success", "error", "requeue", "requeue_after")
_RESULT_INDEX = {result: i for i, result in enumerate(RESULTS)}

#: Reconcile durations worth telling apart: 5 ms to a minute, denser below a second.
RECONCILE_TIME_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.8,
    1.0,
    1.5,
    2.0,
    3.0,
    4.0,
    5.0,
    7.5,
    10.0,
    15.0,
    20.0,
    30.0,
    45.0,
    60.0,
)
#: The metrics beyond controller-runtime's five, in the order of :meth:`ControllerMetrics.extras`.
_EXTRAS: tuple[tuple[Any, str, str], ...] = (
    (
        CounterMetricFamily,
        "controller_runtime_terminal_reconcile_errors_total",
        "Total number of terminal reconciliation errors per controller",
    ),
    (
        CounterMetricFamily,
        "pyinformers_controller_reconcile_deadline_exceeded_total",
        "Reconciles that ran past the controller's reconcile_deadline",
    ),
    (
        GaugeMetricFamily,
        "pyinformers_controller_reconciles_over_deadline",
        "Reconciles running past the controller's reconcile_deadline now",
    ),
    (
        CounterMetricFamily,
        "pyinformers_controller_stale_read_deferrals_total",
        "Reconciles held back until the cache showed the key's own last write",
    ),
    (
        CounterMetricFamily,
        "pyinformers_controller_stale_read_timeouts_total",
        "Keys reconciled after consistency_timeout although the cache had not caught up",
    ),
    (
        GaugeMetricFamily,
        "pyinformers_controller_stale_read_tracked_keys",
        "Keys with writes the cache has not shown yet",
    ),
)
_BUCKET_LABELS = tuple(repr(float(b)) for b in RECONCILE_TIME_BUCKETS) + ("+Inf",)


class ControllerMetrics:
    """What one controller records, bound to its name and registry.

    Invariants (under ``_lock``): ``_results[i]`` counts reconciles that ended
    with ``RESULTS[i]``; ``_buckets[j]`` counts durations that fell in bucket
    ``j`` alone (not cumulative; the last one is +Inf); ``_active`` is the
    number of :meth:`reconcile_started` not yet matched by
    :meth:`reconcile_finished`.
    """

    __slots__ = (
        "name",
        "registry",
        "_lock",
        "_results",
        "_buckets",
        "_sum",
        "_active",
        "_max",
        "_terminal",
        "_overdue",
        "_guard",
        "_overdue_now",
        "__weakref__",
    )

    def __init__(self, name: str, registry: Any = None) -> None:
        self.name = name
        #: The registry reported to; None for ``registry=False`` (numbers kept, nothing exported).
        self.registry: CollectorRegistry | None = resolve_registry(registry)
        self._lock = threading.Lock()
        self._results = [0] * len(RESULTS)
        self._buckets = [0] * (len(RECONCILE_TIME_BUCKETS) + 1)
        self._sum = 0.0
        self._active = 0
        self._max = 0
        self._terminal = 0
        self._overdue = 0
        self._guard: Any = None  # a ConsistencyGuard, read at scrape time
        self._overdue_now: Callable[[], int] | None = None
        if self.registry is not None:
            collector_for(self.registry, _Collector).track(self)

    def reconcile_started(self) -> None:
        """A worker entered a reconcile."""
        with self._lock:
            self._active += 1

    def reconcile_finished(self, result: str, seconds: float) -> None:
        """A worker left a reconcile with ``result`` (one of :data:`RESULTS`) after ``seconds``."""
        index = _RESULT_INDEX[result]
        bucket = bisect.bisect_left(RECONCILE_TIME_BUCKETS, seconds)
        with self._lock:
            self._active -= 1
            self._results[index] += 1
            self._buckets[bucket] += 1
            self._sum += seconds

    def terminal_error(self) -> None:
        """A reconcile raised ``TerminalError`` (its ``error`` result is counted by :meth:`reconcile_finished`)."""
        with self._lock:
            self._terminal += 1

    def deadline_exceeded(self) -> None:
        """A reconcile ran past the controller's ``reconcile_deadline``."""
        with self._lock:
            self._overdue += 1

    def track_guard(self, guard: Any) -> None:
        """Report ``guard``'s counts (a ConsistencyGuard, or None) at each scrape."""
        self._guard = guard

    def track_overdue(self, count: Callable[[], int]) -> None:
        """``count()`` says, at each scrape, how many reconciles run past the deadline now."""
        self._overdue_now = count

    def extras(self) -> list[float]:
        """``[terminal, deadline exceeded, over deadline now, deferrals, timeouts, tracked keys]``."""
        with self._lock:
            out: list[float] = [self._terminal, self._overdue]
        count = self._overdue_now
        out.append(count() if count is not None else 0)
        guard = self._guard
        if guard is None:
            out += [0, 0, 0]
        else:
            stats = guard.stats()
            out += [stats.deferred, stats.timeouts, stats.tracked]
        return out

    def set_max_concurrent(self, workers: int) -> None:
        with self._lock:
            self._max = workers

    def snapshot(self) -> tuple[list[int], list[int], float, int, int]:
        """``(results, buckets, sum, active, max)`` copies, consistent with each other."""
        with self._lock:
            return list(self._results), list(self._buckets), self._sum, self._active, self._max

    def __repr__(self) -> str:
        results, _, _, active, _ = self.snapshot()
        counts = " ".join(f"{r}={n}" for r, n in zip(RESULTS, results))
        return f"<ControllerMetrics {self.name!r} {counts} active={active}>"


class _Collector:
    """Turns the live controllers' numbers into metric families at scrape time (one per registry)."""

    def __init__(self) -> None:
        self._controllers: LiveSet[ControllerMetrics] = LiveSet()
        self.track = self._controllers.add

    @staticmethod
    def _families() -> tuple[Any, ...]:
        return (
            CounterMetricFamily(
                "controller_runtime_reconcile_total",
                "Total number of reconciliations per controller",
                labels=("controller", "result"),
            ),
            CounterMetricFamily(
                "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
                labels=("controller",),
            ),
            HistogramMetricFamily(
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                labels=("controller",),
            ),
            GaugeMetricFamily(
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                labels=("controller",),
            ),
            GaugeMetricFamily(
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                labels=("controller",),
            ),
        ) + tuple(family(name, text, labels=("controller",)) for family, name, text in _EXTRAS)

    def describe(self) -> Iterator[Any]:
        return iter(self._families())

    def collect(self) -> Iterator[Any]:
        controllers = self._controllers.snapshot()
        merged: dict[str, list] = {}
        for metrics in controllers:
            results, buckets, total, active, maximum = metrics.snapshot()
            extras = metrics.extras()
            acc = merged.get(metrics.name)
            if acc is None:
                merged[metrics.name] = [results, buckets, total, active, maximum, extras]
                continue
            acc[5] = [a + b for a, b in zip(acc[5], extras)]
            acc[0] = [a + b for a, b in zip(acc[0], results)]
            acc[1] = [a + b for a, b in zip(acc[1], buckets)]
            acc[2] += total
            acc[3] += active
            acc[4] += maximum
        families = self._families()
        total_f, errors_f, time_f, active_f, max_f = families[:5]
        for name in sorted(merged):
            results, buckets, seconds, active, maximum, extras = merged[name]
            for family, value in zip(families[5:], extras):
                family.add_metric([name], value)
            for result, count in zip(RESULTS, results):
                total_f.add_metric([name, result], count)
            errors_f.add_metric([name], results[_RESULT_INDEX["error"]])
            cumulative, running = [], 0
            for label, count in zip(_BUCKET_LABELS, buckets):
                running += count
                cumulative.append((label, running))
            time_f.add_metric([name], buckets=cumulative, sum_value=seconds)
            active_f.add_metric([name], active)
            max_f.add_metric([name], maximum)
        return iter(families)
