"""What a cache costs: full objects against metadata-only, the memory estimate, the mutation detector.

A server in its own process (the in-process API server, spawned) holds
10,000 realistic Pods (5.1 KB of JSON, 3.2 KB without managedFields) and
10,000 Secrets of 16 KB of data each (and 100,000 Pods unless
``BENCH_QUICK``). Each measurement runs in a fresh child process, started
from the same baseline after its imports, and syncs one informer of the
factory with its defaults (a streaming list, managedFields dropped):

* ``full Pods`` and ``full Secrets``: the objects as the server sends them;
* ``metadata-only Pods`` and ``metadata-only Secrets``: ``metadata_only=True``
  (``PartialObjectMetadata``; a Secret's data never reaches the process);
* ``full Pods, mutation detector on``: the same as full Pods with every
  cached object fingerprinted;
* ``full Pods, strings shared``: the same as full Pods with the opt-in
  transform that shares every short string
  (``chain(drop_managed_fields, share_strings)``).

Figures per measurement: the RSS growth over the sync per object (after it,
with the cache held and the informer running), the sync's wall and CPU time
(all threads), and the informer's own memory estimate
(:meth:`~pyinformers.cache.SharedIndexInformer.memory_estimate`) against the
live bytes measured by walking the whole cache. Variants are interleaved,
``REPEATS`` rounds; the report gives medians and the spread (min-max), and
ratios taken within each round.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.consumers import rss_kb
from benchmarks.pods import make_pod, make_replica_set
from benchmarks.server_process import ChildServer

RESULTS = Path(__file__).resolve().parent / "report" / "results"
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
REPEATS = 3
SMALL, LARGE = 10_000, 100_000
SECRET_BYTES = 16_000


def make_secret(i: int, namespace: str) -> dict:
    """A 16 KB Secret (its data base64, as the API carries it)."""
    blob = (f"{i:08d}" * (SECRET_BYTES // 8))[:SECRET_BYTES]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": f"tls-{i:06d}",
            "namespace": namespace,
            "uid": f"00000000-0000-0000-0001-{i:012d}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web-prod"},
            "annotations": {"example.com/rotated": "2026-01-01T00:00:00Z"},
        },
        "data": {"payload": blob},
    }


def _serve(conn: Any, plan: dict) -> None:
    from pyinformers.testing import ApiServer

    server = ApiServer(history_limit=1000, bookmark_interval=60.0)
    server.start()
    registry = server.registry
    namespaces, pods = registry.find("namespaces", ""), registry.find("pods", "")
    secrets, replica_sets = registry.find("secrets", ""), registry.find("replicasets", "apps")
    gc.disable()
    for namespace, spec in plan.items():
        server.rest.create(namespaces, None, {"metadata": {"name": namespace}})
        server.store.put(
            replica_sets.storage_key, namespace, "web-7d4b9c8f6d", make_replica_set(namespace)
        )
        for i in range(spec.get("pods", 0)):
            pod = make_pod(i, namespace)
            server.store.put(pods.storage_key, namespace, pod["metadata"]["name"], pod)
        for i in range(spec.get("secrets", 0)):
            secret = make_secret(i, namespace)
            server.store.put(secrets.storage_key, namespace, secret["metadata"]["name"], secret)
    gc.collect()
    gc.freeze()
    gc.enable()
    conn.send({"kubeconfig": server.kubeconfig()})
    try:
        conn.recv()
    except EOFError:
        pass
    server.stop()


def _walk_bytes(roots: Any) -> int:
    seen: set[int] = set()
    total = 0
    stack = [roots]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or obj is True or obj is False:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.values())
            stack.extend(obj.keys())
        elif isinstance(obj, list):
            stack.extend(obj)
    return total


def _measure(
    conn: Any,
    kubeconfig: dict,
    namespace: str,
    kind: str,
    metadata_only: bool,
    option: str,
    count: int,
) -> None:
    from kubernetes import config

    from pyinformers.cache import SharedInformerFactory, chain, drop_managed_fields, share_strings
    from pyinformers.resources import PODS, SECRETS

    api_client = config.new_client_from_config_dict(kubeconfig)
    transform = (
        chain(drop_managed_fields, share_strings) if option == "shared" else drop_managed_fields
    )
    factory = SharedInformerFactory(api_client, metrics_registry=False, transform=transform)
    resource = PODS if kind == "pods" else SECRETS
    gc.collect()
    before = rss_kb()
    informer = factory.informer(
        resource,
        namespace=namespace,
        metadata_only=metadata_only,
        mutation_detector=option == "detector",
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    factory.start()
    if not informer.wait_for_cache_sync(900):
        raise RuntimeError("the informer did not sync")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert len(informer.indexer) == count, (len(informer.indexer), count)
    gc.collect()
    growth_kb = rss_kb() - before
    estimate_started = time.perf_counter()
    estimate = informer.memory_estimate(max_age=0)
    estimate_ms = (time.perf_counter() - estimate_started) * 1000
    live = _walk_bytes(informer.indexer.list())
    factory.stop(timeout=10)
    api_client.close()
    conn.send(
        {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "rss_bytes_per_object": growth_kb * 1024 / count,
            "estimate_bytes": estimate.bytes,
            "live_bytes": live,
            "estimate_ms": estimate_ms,
        }
    )


def _run(kubeconfig: dict, *args: Any) -> dict:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_measure, args=(child, kubeconfig, *args), daemon=True)
    process.start()
    if not parent.poll(1200):
        process.kill()
        raise RuntimeError(f"measurement {args} did not finish")
    result = parent.recv()
    process.join(30)
    return result


VARIANTS = [
    # label, namespace, kind, metadata_only, option ("detector": mutation detector on,
    # "shared": strings shared), count
    ("full Pods", "mem-10k", "pods", False, "", SMALL),
    ("metadata-only Pods", "mem-10k", "pods", True, "", SMALL),
    ("full 16 KB Secrets", "mem-10k", "secrets", False, "", SMALL),
    ("metadata-only 16 KB Secrets", "mem-10k", "secrets", True, "", SMALL),
    ("full Pods, mutation detector on", "mem-10k", "pods", False, "detector", SMALL),
    ("full Pods, strings shared", "mem-10k", "pods", False, "shared", SMALL),
    ("full Pods", "mem-100k", "pods", False, "", LARGE),
    ("metadata-only Pods", "mem-100k", "pods", True, "", LARGE),
]


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def main() -> None:
    plan = {"mem-10k": {"pods": SMALL, "secrets": SMALL}}
    variants = [v for v in VARIANTS if v[5] == SMALL] if QUICK else VARIANTS
    if not QUICK:
        plan["mem-100k"] = {"pods": LARGE}
    repeats = REPEATS
    with ChildServer(_serve, plan, name="bench-cache-memory", timeout=900) as server:
        kubeconfig = server.report["kubeconfig"]
        rounds: list[dict[str, dict]] = []
        for r in range(repeats):
            measured: dict[str, dict] = {}
            for label, namespace, kind, metadata_only, option, count in variants:
                key = f"{label} ({count:,})"
                measured[key] = _run(kubeconfig, namespace, kind, metadata_only, option, count)
                print(
                    f"  round {r + 1}: {key}: {measured[key]['rss_bytes_per_object'] / 1000:.1f} KB/object, "
                    f"sync {measured[key]['seconds']:.2f}s",
                    flush=True,
                )
            rounds.append(measured)
    keys = list(rounds[0])
    rows = []
    print()
    header = (
        f"{'cache of':<44}  {'RSS KB/obj':>18}  {'sync s':>18}  {'CPU s':>18}  "
        f"{'estimate/live':>13}  {'estimate ms':>11}"
    )
    print(header)
    print("-" * len(header))
    for key in keys:
        rss = [m[key]["rss_bytes_per_object"] / 1000 for m in rounds]
        sync = [m[key]["seconds"] for m in rounds]
        cpu = [m[key]["cpu_seconds"] for m in rounds]
        accuracy = [m[key]["estimate_bytes"] / max(m[key]["live_bytes"], 1) for m in rounds]
        est_ms = [m[key]["estimate_ms"] for m in rounds]
        rows.append(
            {
                "label": key,
                "rss_kb_per_object": rss,
                "sync_seconds": sync,
                "cpu_seconds": cpu,
                "estimate_over_live": accuracy,
                "estimate_ms": est_ms,
            }
        )
        print(
            f"{key:<44}  {_spread(rss, '.2f'):>18}  {_spread(sync, '.2f'):>18}  {_spread(cpu, '.2f'):>18}  "
            f"{statistics.median(accuracy):>12.2f}x  {statistics.median(est_ms):>11.1f}"
        )

    def ratio(a: str, b: str, field: str) -> list[float]:
        return [m[a][field] / m[b][field] for m in rounds]

    ratios = {
        "metadata-only / full Pods, RSS": ratio(
            "metadata-only Pods (10,000)", "full Pods (10,000)", "rss_bytes_per_object"
        ),
        "metadata-only / full Secrets, RSS": ratio(
            "metadata-only 16 KB Secrets (10,000)",
            "full 16 KB Secrets (10,000)",
            "rss_bytes_per_object",
        ),
        "metadata-only Secrets / metadata-only Pods, RSS": ratio(
            "metadata-only 16 KB Secrets (10,000)",
            "metadata-only Pods (10,000)",
            "rss_bytes_per_object",
        ),
        "mutation detector on / off, sync CPU": ratio(
            "full Pods, mutation detector on (10,000)", "full Pods (10,000)", "cpu_seconds"
        ),
        "mutation detector on / off, RSS": ratio(
            "full Pods, mutation detector on (10,000)", "full Pods (10,000)", "rss_bytes_per_object"
        ),
        "strings shared / not, RSS": ratio(
            "full Pods, strings shared (10,000)", "full Pods (10,000)", "rss_bytes_per_object"
        ),
        "strings shared / not, sync CPU": ratio(
            "full Pods, strings shared (10,000)", "full Pods (10,000)", "cpu_seconds"
        ),
        "metadata-only / full Pods, sync CPU": ratio(
            "metadata-only Pods (10,000)", "full Pods (10,000)", "cpu_seconds"
        ),
    }
    print()
    for name, values in ratios.items():
        print(f"{name:<52} {_spread(values, '.2f')} (per round)")
    print(
        "RSS KB/obj: RSS growth over the sync per cached object, median (min-max) of the rounds; the goal for"
    )
    print("metadata-only is at most 2.5 KB, whatever the size of the object's data.")
    print(
        "estimate/live: the informer's sampled memory estimate over the live bytes of the whole cache walked."
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cache_memory.json").write_text(
        json.dumps({"rows": rows, "ratios": ratios}, indent=1)
    )


if __name__ == "__main__":
    main()
