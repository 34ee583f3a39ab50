"""What the stale-read guard costs a reconcile, in CPU.

A controller's worker runs ``Controller.process(key)`` for each key, as the
worker loop does, over 2,000 distinct keys of a cache of 2,000 ConfigMaps,
in two shapes of reconcile:

* **writes**: the reconcile reads its object from the lister and replaces it
  (a stand-in client: the stored object goes straight into the cache, and
  the write is reported through the same seam a ``ResourceClient`` reports
  it, so the guard records it and, next time, finds it caught up);
* **reads only**: the reconcile reads its object and writes nothing (the
  guard's fast path: one lookup of a key with nothing recorded).

Each shape runs with the guard on (``read_your_writes=True``, the default)
and off, interleaved, in one process; every key is processed twice per run
(the second pass checks what the first recorded). Reported: CPU (process
time) per reconcile, and the ratio on / off per shape, median of 5 rounds
with the spread. No network, so the guard's own cost is not hidden behind
an HTTP round trip (which costs ~500-700 us per write here: the real ratio
is far smaller).
"""

from __future__ import annotations

import os
import statistics
import time

from pyinformers.api import meta
from pyinformers.api._observe import notify_write
from pyinformers.controller import Controller
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import FakeInformer

KEYS = 500 if os.environ.get("BENCH_QUICK") else 2_000
ROUNDS = 5


class _Writes(Controller):
    watches_optional = True

    def __init__(self, informer: FakeInformer, write: bool, guard: bool) -> None:
        super().__init__("bench-consistency", metrics_registry=False, read_your_writes=guard)
        self.informer = informer
        self.lister = informer.lister()
        self.write = write
        self.watch(informer)

    def reconcile(self, key: str) -> None:
        ns, name = meta.split_key(key)
        cm = self.lister.namespace(ns).get(name)
        if cm is None or not self.write:
            return
        stored = meta.deep_copy(cm)
        md = stored["metadata"]
        md["resourceVersion"] = str(int(md["resourceVersion"]) + 1)
        self.informer.indexer.update(stored)  # the watch event, already applied
        notify_write(CONFIGMAPS, "update", stored)


def _informer() -> FakeInformer:
    informer = FakeInformer(CONFIGMAPS)
    for i in range(KEYS):
        informer.indexer.add(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"cm-{i}",
                    "namespace": "default",
                    "resourceVersion": str(i + 1),
                },
                "data": {"k": "v" * 64},
            }
        )
    return informer


def _run(write: bool, guard: bool) -> float:
    """CPU seconds per reconcile for one run."""
    controller = _Writes(_informer(), write, guard)
    keys = [f"default/cm-{i}" for i in range(KEYS)]
    started = time.process_time()
    for _ in range(2):
        for key in keys:
            controller.queue.add(key)
            got, _shutdown = controller.queue.get()
            controller.process(got)
    spent = time.process_time() - started
    controller.stop(0)
    return spent / (2 * KEYS)


def main() -> None:
    for write in (True, False):
        shape = "writes" if write else "reads only"
        on, off, ratios = [], [], []
        for _ in range(ROUNDS):
            a = _run(write, guard=False)
            b = _run(write, guard=True)
            off.append(a)
            on.append(b)
            ratios.append(b / a)
        print(
            f"{shape:10s}: guard off {statistics.median(off) * 1e6:6.1f} us/reconcile, "
            f"on {statistics.median(on) * 1e6:6.1f} us/reconcile, "
            f"on/off {statistics.median(ratios):.3f}x (spread {min(ratios):.3f}-{max(ratios):.3f}), "
            f"+{(statistics.median(on) - statistics.median(off)) * 1e6:.1f} us"
        )


if __name__ == "__main__":
    main()
