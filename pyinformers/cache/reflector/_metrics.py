"""Prometheus metrics of reflectors: ``pyinformers_reflector_*``, read from live reflectors at scrape time.

Internal module: a :class:`~pyinformers.cache.reflector._reflector.Reflector` registers
itself with the one :class:`ReflectorCollector` of its registry
(:func:`pyinformers._metrics.collector_for`).

Thread-safety: :meth:`ReflectorCollector.add` and :meth:`ReflectorCollector.collect`
may run on any thread; the set of reflectors is guarded by a lock and holds
them weakly, so a forgotten reflector drops out of the metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyinformers._metrics import LiveSet

if TYPE_CHECKING:
    from pyinformers.cache.reflector._reflector import Reflector

__all__ = ["ReflectorCollector"]


class ReflectorCollector:
    """Prometheus collector reading the counters of live reflectors at scrape time.

    The hot path only bumps plain integers; nothing is locked per event.
    One collector per registry; reflectors add themselves (weakly).
    """

    def __init__(self) -> None:
        self._reflectors: LiveSet[Reflector] = LiveSet()
        self.add = self._reflectors.add

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        reflectors = self._reflectors.snapshot()
        counters = {
            "lists": "Full lists completed (streaming lists included).",
            "watches": "Watch requests opened.",
            "watch_events": "Watch events (added, modified, deleted) applied to the store.",
            "bookmarks": "Bookmark events received.",
            "errors": "Failed list or watch requests and broken watch streams.",
            "restarts": "Watches re-opened from the last resourceVersion after a close, an error or a stall.",
            "relists": "Lists forced by 410 Gone/Expired.",
            "stalls": "Watches closed because they stayed silent for the stall timeout.",
        }
        sums: dict[str, dict[str, float]] = {key: {} for key in counters}
        ages: dict[str, float] = {}
        healthy: dict[str, float] = {}
        for reflector in reflectors:
            stats = reflector.stats
            for key in counters:
                attr = "events" if key == "watch_events" else key
                bucket = sums[key]
                bucket[reflector.name] = bucket.get(reflector.name, 0) + getattr(stats, attr)
            age = reflector.last_activity_age()
            if age is not None:
                ages[reflector.name] = min(age, ages.get(reflector.name, age))
            healthy[reflector.name] = min(
                healthy.get(reflector.name, 1.0), 1.0 if reflector.healthy() else 0.0
            )
        for key, doc in counters.items():
            family = CounterMetricFamily(f"pyinformers_reflector_{key}", doc, labels=["name"])
            for name, value in sorted(sums[key].items()):
                family.add_metric([name], value)
            yield family
        gauge = GaugeMetricFamily(
            "pyinformers_reflector_last_sync_age_seconds",
            "Seconds since the reflector last heard from the server (a list page, an event or a bookmark).",
            labels=["name"],
        )
        for name, value in sorted(ages.items()):
            gauge.add_metric([name], value)
        yield gauge
        gauge = GaugeMetricFamily(
            "pyinformers_reflector_healthy",
            "1 when the reflector is not stuck in repeated failures.",
            labels=["name"],
        )
        for name, value in sorted(healthy.items()):
            gauge.add_metric([name], value)
        yield gauge
