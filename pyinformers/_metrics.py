"""Prometheus plumbing shared by every part of pyinformers.

Work queues, reflectors, informers and controllers keep their counts in plain
attributes under locks they already hold, and report them through a custom
collector that builds the metric families when a registry is scraped: the
hot paths make no prometheus-client calls. This module owns the two rules
they share:

* the meaning of the ``metrics_registry`` argument every component takes:
  ``None`` is prometheus-client's global ``REGISTRY``, ``False`` records
  nothing, anything else is the registry to report to
  (:func:`resolve_registry`);
* one collector of each kind per registry, created and registered on first
  use (prometheus-client refuses to register the same metric names twice in
  one registry), and forgotten with the registry (:func:`collector_for`);
* the live objects a collector reads at scrape time, held weakly so a
  stopped component is forgotten with it (:class:`LiveSet`).

Thread-safety: everything here may be called from any thread.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["LiveSet", "collector_for", "resolve_registry"]

C = TypeVar("C")
T = TypeVar("T")

_lock = threading.Lock()
# registry -> {collector class: the collector registered there}
_collectors: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def resolve_registry(registry: Any) -> Any | None:
    """The registry a component reports to: the global one for ``None``, none for ``False``."""
    if registry is False:
        return None
    if registry is None:
        from prometheus_client import REGISTRY

        return REGISTRY
    return registry


def collector_for(registry: Any, kind: Callable[[], C]) -> C:
    """The collector of class ``kind`` registered in ``registry``, created on first use.

    Raises ``ValueError`` (from prometheus-client) when ``registry`` already
    holds metrics of the same names registered by someone else.
    """
    with _lock:
        per_kind = _collectors.get(registry)
        if per_kind is None:
            per_kind = _collectors[registry] = {}
        collector = per_kind.get(kind)
        if collector is None:
            collector = kind()
            registry.register(collector)
            per_kind[kind] = collector
        return collector


class LiveSet(Generic[T]):
    """The components a scrape-time collector reports on: added weakly, read as a snapshot.

    ``add`` is called when a component starts reporting; :meth:`snapshot`
    when the registry is scraped. A component that is garbage-collected
    drops out by itself. Thread-safe.
    """

    __slots__ = ("_items", "_lock")

    def __init__(self) -> None:
        self._items: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, item: T) -> None:
        with self._lock:
            self._items.add(item)

    def snapshot(self) -> list[T]:
        with self._lock:
            return list(self._items)
