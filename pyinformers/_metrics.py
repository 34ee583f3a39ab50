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
  one registry), and forgotten with the registry (:func:`collector_for`).

Thread-safety: both functions may be called from any thread.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["collector_for", "resolve_registry"]

C = TypeVar("C")

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
