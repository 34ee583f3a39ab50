"""What a read-only handler view costs, against the plain cached object and a deep copy.

A handler of the shape controllers register (map an object to its key, look
at its labels and its controller reference, as ``EnqueueForOwner`` does) runs
over 10,000 Pods as benchmarks.pods makes them, in three ways, interleaved in
one process:

* **plain**: the handler reads the cached dicts (the default; must not mutate);
* **view**: through :func:`pyinformers.cache.read_only_handler` (refuses mutation);
* **deep copy**: the handler first deep-copies the object, what
  controller-runtime's cache does on every read (mutation is then harmless).

Reported: CPU (process time) per call, and each way's ratio to plain, median of
5 rounds with the spread. The absolute figures are small next to a
notification's path through the informer (tens of µs per event, see
bench_pipeline), which is the comparison that matters.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.pods import make_pod
from pyinformers.api import meta
from pyinformers.cache import ResourceEventHandlerFuncs, read_only_handler

OBJECTS = 2_000 if os.environ.get("BENCH_QUICK") else 10_000
ROUNDS = 5


def _handler(sink: list[Any]) -> ResourceEventHandlerFuncs[Any]:
    def on_add(obj: Any, initial: bool) -> None:
        owner = meta.controller_of(obj)
        labels = meta.labels(obj)
        sink.append((meta.object_key(obj), owner and owner["uid"], labels.get("app")))

    return ResourceEventHandlerFuncs(on_add=on_add)


def _deep_copying(sink: list[Any]) -> ResourceEventHandlerFuncs[Any]:
    inner = _handler(sink)
    assert inner.on_add is not None
    on_add = inner.on_add
    return ResourceEventHandlerFuncs(
        on_add=lambda obj, initial: on_add(meta.deep_copy(obj), initial)
    )


def _run(make: Callable[[list[Any]], Any], pods: list[dict[str, Any]]) -> float:
    sink: list[Any] = []
    handler = make(sink)
    on_add = handler.on_add
    started = time.process_time()
    for pod in pods:
        on_add(pod, False)
    spent = time.process_time() - started
    assert len(sink) == len(pods)
    return spent / len(pods)


def main() -> None:
    pods = [make_pod(i) for i in range(OBJECTS)]
    ways: dict[str, Callable[[list[Any]], Any]] = {
        "plain": _handler,
        "view": lambda sink: read_only_handler(_handler(sink)),
        "deep copy": _deep_copying,
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(ROUNDS):
        for name, make in ways.items():
            times[name].append(_run(make, pods))
    plain = times["plain"]
    for name, values in times.items():
        ratios = [v / p for v, p in zip(values, plain, strict=True)]
        print(
            f"{name:9s}: {statistics.median(values) * 1e6:6.2f} us/call, "
            f"{statistics.median(ratios):.2f}x plain "
            f"(spread {min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
