"""Cache core: the Indexer, DeltaFIFO and deep_copy against baselines measured in the same run.

* **add / update** of 100,000 small Pod-like dicts into an :class:`Indexer`
  with both built-in indexes (namespace, controller owner UID), against the
  floor: a plain ``dict`` store under one lock (key computed the same way).
* **replace** of the same 100,000 objects (a relist), against filling the
  plain dict.
* **by_index** lookups per second: children of one owner (about 3 objects)
  and a namespace (2,000 objects), against ``get_by_key`` on the plain dict.
* **memory**: the store's own bytes per object beyond the objects
  (``tracemalloc``, objects allocated before tracing starts), against the
  plain dict store's.
* **DeltaFIFO**: add + pop into the Indexer, per object, against
  ``queue.Queue`` put + get feeding the plain dict.
* **deep_copy** of one Pod against ``copy.deepcopy`` and an orjson round trip.

Each timing is the best of a few repetitions; ratios are ours / baseline
(time ratios: > 1 means slower than the floor).
"""

from __future__ import annotations

import copy
import gc
import queue
import threading
import time
import timeit
import tracemalloc

import orjson

from pyinformers.api.meta import deep_copy, object_key
from pyinformers.cache._delta_fifo import DeltaFIFO, DeltaType
from pyinformers.cache._store import NAMESPACE_INDEX, OWNER_UID_INDEX, Indexer, default_indexers

N = 100_000
NAMESPACES = 50
PODS_PER_OWNER = 3
REPEATS = 2


_SPECS = [
    {
        "nodeName": f"node-{n}",
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.25",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
    }
    for n in range(200)
]


def _pod(i: int, rv: int) -> dict:
    owner = i // PODS_PER_OWNER
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-{owner}-{i:06d}",
            "namespace": f"team-{i % NAMESPACES}",
            "uid": f"0000-{i:08d}",
            "resourceVersion": str(rv),
            "labels": {"app": "web", "pod-template-hash": f"h{owner % 97}"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"web-{owner}",
                    "uid": f"rs-{owner:08d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        # the store never looks at the spec: share one per node to keep setup time down
        "spec": _SPECS[i % len(_SPECS)],
        "status": {"phase": "Running", "podIP": f"10.{i % 250}.{i // 250 % 250}.{i % 7}"},
    }


class _DictStore:
    """The floor: a dict under a lock, keyed like the Indexer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: dict[str, dict] = {}

    def add(self, obj: dict) -> None:
        key = object_key(obj)
        with self.lock:
            self.items[key] = obj

    def get_by_key(self, key: str):
        with self.lock:
            return self.items.get(key)


def _best(fn, repeats: int = REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t = fn()
        best = min(best, t)
    return best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _row(name: str, ours: float, base: float, unit: str, lower_is_better: bool = True) -> None:
    ratio = ours / base if base else float("nan")
    print(f"{name:<44} {ours:>14,.1f} {base:>14,.1f} {unit:<10} {ratio:>7.2f}")


def main() -> None:
    gc_was = gc.isenabled()
    gc.disable()  # the cyclic GC re-traversing 100k growing dicts would dominate (PERFORMANCE.md)
    try:
        _run()
    finally:
        if gc_was:
            gc.enable()


def _run() -> None:
    first = [_pod(i, 1) for i in range(N)]
    second = [_pod(i, 2) for i in range(N)]
    print(
        f"{N:,} Pod-like objects, {NAMESPACES} namespaces, {PODS_PER_OWNER} Pods per owner; "
        f"best of {REPEATS}"
    )
    print(f"{'measure':<44} {'ours':>14} {'baseline':>14} {'unit':<10} {'ratio':>7}")

    # -- add / update
    def fill_indexer():
        store = Indexer(default_indexers())
        return _timed(lambda: [store.add(o) for o in first]), store

    def fill_dict():
        store = _DictStore()
        return _timed(lambda: [store.add(o) for o in first]), store

    add_ours = _best(lambda: fill_indexer()[0])
    add_base = _best(lambda: fill_dict()[0])
    _row("add: us per object (2 indexes)", add_ours / N * 1e6, add_base / N * 1e6, "us")

    _, store = fill_indexer()
    _, dstore = fill_dict()

    def update_indexer():
        t = _timed(lambda: [store.update(o) for o in second])
        [store.update(o) for o in first]
        return t

    update_ours = _best(update_indexer)
    update_base = _best(lambda: _timed(lambda: [dstore.add(o) for o in second]))
    _row("update: us per object (2 indexes)", update_ours / N * 1e6, update_base / N * 1e6, "us")
    print(
        f"{'  => add throughput':<44} {N / add_ours:>14,.0f} {N / add_base:>14,.0f} {'objects/s':<10}"
    )
    print(
        f"{'  => update throughput':<44} {N / update_ours:>14,.0f} {N / update_base:>14,.0f} {'objects/s':<10}"
    )

    # -- replace (relist)
    replace_ours = _best(lambda: _timed(lambda: Indexer(default_indexers()).replace(first, "1")))
    replace_base = _best(lambda: _timed(lambda: {object_key(o): o for o in first}))
    _row("replace: us per object (2 indexes)", replace_ours / N * 1e6, replace_base / N * 1e6, "us")

    # -- by_index
    owners = [f"rs-{o:08d}" for o in range(0, N // PODS_PER_OWNER, 7)]
    keys = [object_key(o) for o in first[::7]]
    lookups = 50_000

    def owner_lookups():
        by_index = store.by_index
        sel = (owners * (lookups // len(owners) + 1))[:lookups]
        return _timed(lambda: [by_index(OWNER_UID_INDEX, u) for u in sel])

    def key_lookups():
        get = dstore.get_by_key
        sel = (keys * (lookups // len(keys) + 1))[:lookups]
        return _timed(lambda: [get(k) for k in sel])

    owner_t = _best(owner_lookups)
    key_t = _best(key_lookups)
    print(
        f"{'by_index(owner uid) lookups/s (3 objects)':<44} {lookups / owner_t:>14,.0f} "
        f"{lookups / key_t:>14,.0f} {'lookups/s':<10} {key_t / owner_t:>7.2f}"
    )
    ns_lookups = 500
    ns_t = _best(
        lambda: _timed(
            lambda: [
                store.by_index(NAMESPACE_INDEX, f"team-{i % NAMESPACES}") for i in range(ns_lookups)
            ]
        )
    )
    scan_t = _best(
        lambda: (
            _timed(
                lambda: [
                    [o for o in dstore.items.values() if o["metadata"]["namespace"] == f"team-{i}"]
                    for i in range(5)
                ]
            )
            / 5
            * ns_lookups
        ),
        repeats=1,
    )
    print(
        f"{'by_index(namespace) lookups/s (2,000 objs)':<44} {ns_lookups / ns_t:>14,.0f} "
        f"{ns_lookups / scan_t:>14,.0f} {'lookups/s':<10} {scan_t / ns_t:>7.2f}  (baseline: full scan)"
    )

    # -- memory beyond the objects
    def traced(build):
        gc.collect()
        tracemalloc.start()
        try:
            holder = build()
            size, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        del holder
        return size

    mem_objects = first[: N // 5]  # tracemalloc is slow; the per-object figure does not depend on N

    def build_indexer():
        s = Indexer(default_indexers())
        for o in mem_objects:
            s.add(o)
        return s

    def build_dict():
        s = _DictStore()
        for o in mem_objects:
            s.add(o)
        return s

    mem_ours = traced(build_indexer) / len(mem_objects)
    mem_base = traced(build_dict) / len(mem_objects)
    _row("store memory beyond objects: bytes/object", mem_ours, mem_base, "bytes")

    # -- DeltaFIFO feeding the Indexer
    fifo_n = 50_000
    subset = first[:fifo_n]

    def fifo_run():
        target = Indexer(default_indexers())
        fifo = DeltaFIFO(known_objects=target)

        def process(deltas, initial):
            for d in deltas:
                if d.type is DeltaType.DELETED:
                    target.delete(d.object)
                else:
                    target.update(d.object)

        def run():
            for o in subset:
                fifo.add(o)
            while len(fifo):
                fifo.pop(process, timeout=0)

        return _timed(run)

    def queue_run():
        q: queue.Queue = queue.Queue()
        target = _DictStore()

        def run():
            for o in subset:
                q.put(o)
            while not q.empty():
                target.add(q.get_nowait())

        return _timed(run)

    fifo_t = _best(fifo_run)
    queue_t = _best(queue_run)
    _row(
        "DeltaFIFO add+pop into Indexer: us/object",
        fifo_t / fifo_n * 1e6,
        queue_t / fifo_n * 1e6,
        "us",
    )

    # -- deep_copy (of a Pod decoded from JSON, so nothing in it is shared)
    pod = orjson.loads(orjson.dumps(_pod(12345, 1)))
    n, reps = 1_000, 25  # many short runs: the minimum filters out a busy machine's noise
    dc = min(timeit.repeat(lambda: deep_copy(pod), number=n, repeat=reps)) / n * 1e6
    cdc = min(timeit.repeat(lambda: copy.deepcopy(pod), number=n, repeat=reps)) / n * 1e6
    oj = (
        min(timeit.repeat(lambda: orjson.loads(orjson.dumps(pod)), number=n, repeat=reps)) / n * 1e6
    )
    _row("deep_copy of one Pod vs copy.deepcopy: us", dc, cdc, "us")
    _row("deep_copy of one Pod vs orjson round trip: us", dc, oj, "us")
    print(f"  => deep_copy is {cdc / dc:.1f}x faster than copy.deepcopy")


if __name__ == "__main__":
    main()
