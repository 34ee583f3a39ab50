"""Prometheus metrics of controllers, named as controller-runtime names them.

Every series carries the label ``controller`` (the controller's name):

==============================================  =========  =============================================
metric                                          type       meaning
==============================================  =========  =============================================
``controller_runtime_reconcile_total``          counter    reconciles, by ``result``: ``success``,
                                                           ``error``, ``requeue``, ``requeue_after``
``controller_runtime_reconcile_errors_total``   counter    reconciles that raised
``controller_runtime_reconcile_time_seconds``   histogram  how long each reconcile took (any result)
``controller_runtime_active_workers``           gauge      workers inside a reconcile right now
``controller_runtime_max_concurrent_reconciles`` gauge     the controller's worker count
==============================================  =========  =============================================

The controller's work queue reports the client-go work-queue metrics
(``workqueue_*``) under the controller's name, in the same registry.

``prometheus_client`` refuses to register a metric name twice in one
registry, so the families are created once per registry and cached here
(weakly: a registry that is dropped takes its families with it). Controllers
sharing a name share series.

Threading: every method may be called from any thread (prometheus-client's
metrics lock internally).
"""

from __future__ import annotations

import threading
import weakref
from typing import Optional

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["ControllerMetrics", "RECONCILE_TIME_BUCKETS", "RESULTS"]

#: The values of the ``result`` label of ``controller_runtime_reconcile_total``.
RESULTS: tuple[str, ...] = ("success", "error", "requeue", "requeue_after")

#: Reconcile durations worth telling apart: 5 ms to a minute, denser below a second.
RECONCILE_TIME_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8,
    1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)


class _Families:
    """The metric families of one registry (created once per registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ("controller",),
            registry=registry,
        )
        self.time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ("controller",),
            registry=registry,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ("controller",),
            registry=registry,
        )


_families_lock = threading.Lock()
_families_by_registry: "weakref.WeakKeyDictionary[CollectorRegistry, _Families]" = weakref.WeakKeyDictionary()


def _families_for(registry: CollectorRegistry) -> _Families:
    with _families_lock:
        families = _families_by_registry.get(registry)
        if families is None:
            families = _Families(registry)
            _families_by_registry[registry] = families
        return families


class ControllerMetrics:
    """What one controller records, bound to its name and registry.

    Creating it makes every series exist at zero (all four results, the
    error counter, the gauges), so dashboards and alerts see the controller
    before its first reconcile.
    """

    __slots__ = ("name", "registry", "_total", "_errors", "_time", "_active", "_max")

    def __init__(self, name: str, registry: Optional[CollectorRegistry] = None) -> None:
        self.name = name
        self.registry = REGISTRY if registry is None else registry
        families = _families_for(self.registry)
        self._total = {result: families.total.labels(name, result) for result in RESULTS}
        self._errors = families.errors.labels(name)
        self._time = families.time.labels(name)
        self._active = families.active_workers.labels(name)
        self._max = families.max_concurrent.labels(name)

    def reconcile_started(self) -> None:
        """A worker entered a reconcile."""
        self._active.inc()

    def reconcile_finished(self, result: str, seconds: float) -> None:
        """A worker left a reconcile with ``result`` (one of :data:`RESULTS`) after ``seconds``."""
        self._active.dec()
        self._total[result].inc()
        if result == "error":
            self._errors.inc()
        self._time.observe(seconds)

    def set_max_concurrent(self, workers: int) -> None:
        self._max.set(workers)

    def __repr__(self) -> str:
        return f"<ControllerMetrics {self.name!r}>"
