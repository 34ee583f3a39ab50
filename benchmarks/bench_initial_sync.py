"""Initial sync: how fast an informer fills its cache, and how much memory the cache takes.

A server in its own process holds 10,000 and 100,000 realistic Pods (5.1 KB
of JSON each, two managedFields entries). Each measurement runs in a fresh
child process, so it starts from a clean heap and its peak RSS is its own:

* the baseline: ``CoreV1Api().list_namespaced_pod`` returning typed
  ``V1Pod`` models (one request, as most code calls it), 10,000 Pods;
* a pyinformers ``SharedIndexInformer`` with the library's defaults, from
  start until ``has_synced()``: a streaming list (a watch with
  ``sendInitialEvents``), each object transformed (managedFields dropped) as
  it is decoded; at 10,000 and 100,000 Pods, and at 10,000 without the
  transform;
* the list path at 10,000 and 100,000 (``use_watch_list=False``, also the
  fallback for servers without streaming lists): ``resourceVersion=0``,
  which the server answers from its watch cache in one response;
* the default at 100,000 with the cyclic GC left running during the fill
  (the reflector's and the informer's GC pause disabled), to show what the
  pause buys; and, after the sync, how long a full ``gc.collect()`` takes
  with and without ``gc.freeze()``.

RSS is the growth of the child's RSS over the sync, measured after it (the
cache held, the informer running); the peak is ``VmHWM`` (this program's
high-water RSS) over the same baseline. Memory per cached object is the deep size of what the cache (or the typed
list) holds, counting every reachable object once (strings shared between
objects are counted once, which is what they cost). The typed baseline runs
at 10,000 only: at 100,000 it would need ~7 GB and minutes; its per-object
rate does not improve with size, so 100,000-object ratios use its 10,000 rate.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.consumers import peak_rss_kb, rss_kb
from benchmarks.server_process import ServerProcess

RESULTS = Path(__file__).resolve().parent / "report" / "results"

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
SMALL, LARGE = 10_000, 100_000
NS_SMALL, NS_LARGE = "sync-10k", "sync-100k"
DEFAULT_LABEL = "pyinformers informer, defaults (streaming list, drop managedFields)"
RV0_LABEL = "pyinformers informer, list resourceVersion=0 (one response)"


# --------------------------------------------------------------------------- measuring memory
def deep_size(roots: Any) -> int:
    """Bytes of every object reachable from ``roots`` (each counted once; types, modules, functions skipped)."""
    seen: set[int] = set()
    total = 0
    stack = [roots]
    skip = (type, type(sys), type(deep_size), type(len))
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip) or obj is None or obj is True or obj is False:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def _rss_mb() -> float:
    return rss_kb() * 1024 / 1e6


def _peak_mb() -> float:
    return peak_rss_kb() * 1024 / 1e6  # VmHWM: this program's own peak (see consumers.peak_rss_kb)


# --------------------------------------------------------------------------- one measurement, in a child process
def _measure(
    conn: Any, kubeconfig: dict, namespace: str, variant: str, count: int, options: dict
) -> None:
    from kubernetes import client, config

    from pyinformers.api._client import ResourceClient
    from pyinformers.api._listwatch import ListWatch
    from pyinformers.cache import SharedIndexInformer, drop_managed_fields
    from pyinformers.resources import PODS

    api_client = config.new_client_from_config_dict(kubeconfig)
    result: dict[str, Any] = {}
    # The baseline after the imports: what the libraries cost is the same for any cache size.
    before = _rss_mb()
    if variant == "typed":
        api = client.CoreV1Api(api_client)
        started, cpu_started = time.perf_counter(), time.process_time()
        pods = api.list_namespaced_pod(namespace).items
        result["seconds"] = time.perf_counter() - started
        result["cpu_seconds"] = time.process_time() - cpu_started  # all threads
        assert len(pods) == count, len(pods)
        held: Any = pods
        gc.collect()
        result["final_growth_mb"] = _rss_mb() - before
    else:
        if variant == "gc-running":
            import pyinformers.cache.reflector._reflector as reflector_module

            reflector_module.gc_paused = contextlib.nullcontext  # type: ignore[assignment]
        informer = SharedIndexInformer(
            ListWatch(ResourceClient(api_client, PODS), namespace=namespace),
            name=f"bench-{namespace}",
            transform=None if variant == "keep-managed-fields" else drop_managed_fields,
            pause_gc_during_sync=variant != "gc-running",
            metrics_registry=False,
            reflector_options=options,
        )
        started, cpu_started = time.perf_counter(), time.process_time()
        informer.start()
        if not informer.wait_for_cache_sync(600):
            raise RuntimeError("the informer did not sync")
        result["seconds"] = time.perf_counter() - started
        result["cpu_seconds"] = time.process_time() - cpu_started  # all threads
        assert len(informer.indexer) == count, len(informer.indexer)
        held = informer.indexer.list()
        gc.collect()
        result["final_growth_mb"] = (
            _rss_mb() - before
        )  # the synced cache, with the informer running
        if variant == "default" and count == LARGE:
            informer_objects = len(gc.get_objects())
            started = time.perf_counter()
            gc.collect()
            result["collect_seconds"] = time.perf_counter() - started
            gc.freeze()
            started = time.perf_counter()
            gc.collect()
            result["collect_frozen_seconds"] = time.perf_counter() - started
            gc.unfreeze()
            result["tracked_objects"] = informer_objects
        informer.stop(timeout=5.0)
    result["peak_growth_mb"] = _peak_mb() - before
    result["final_growth_mb"] = result.get("final_growth_mb", _rss_mb() - before)
    result["bytes_per_object"] = deep_size(held) / count
    api_client.close()
    conn.send(result)


def _run(kubeconfig: dict, namespace: str, variant: str, count: int, options: dict) -> dict:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(
        target=_measure, args=(child, kubeconfig, namespace, variant, count, options), daemon=True
    )
    process.start()
    if not parent.poll(900):
        process.kill()
        raise RuntimeError(f"measurement {variant} {namespace} did not finish")
    result = parent.recv()
    process.join(30)
    return result


def server_ceiling(kubeconfig: dict, namespace: str) -> float:
    """Seconds to read a streaming list as raw bytes, up to its end bookmark (nothing decoded).

    What the server alone costs for the default sync: the informer cannot be
    faster than this on the same machine.
    """
    import urllib3
    from kubernetes import config

    api_client = config.new_client_from_config_dict(kubeconfig)
    host = api_client.configuration.host
    api_client.close()
    http = urllib3.PoolManager()
    marker = b"k8s.io/initial-events-end"
    url = (
        f"{host}/api/v1/namespaces/{namespace}/pods?watch=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=600"
    )
    started = time.perf_counter()
    response = http.request("GET", url, retries=False, preload_content=False)
    tail = b""
    for chunk in response.stream(1 << 16):
        if marker in tail + chunk:
            break
        tail = chunk[-len(marker) :]
    elapsed = time.perf_counter() - started
    response.release_conn()
    http.clear()
    return elapsed


# --------------------------------------------------------------------------- main
def main() -> None:
    namespaces = (
        {NS_SMALL: {"pods": SMALL}}
        if QUICK
        else {NS_SMALL: {"pods": SMALL}, NS_LARGE: {"pods": LARGE}}
    )
    plan = {"history_limit": 1000, "namespaces": namespaces}
    started = time.perf_counter()
    with ServerProcess(plan) as server:
        print(
            f"server seeded with {SMALL + LARGE:,} Pods in {time.perf_counter() - started:.1f}s "
            "(each measurement below runs in a fresh process)",
            flush=True,
        )
        default: dict = {}  # the library's defaults: a streaming list (watch with sendInitialEvents)
        rv0 = {"use_watch_list": False}  # the list fallback: resourceVersion=0, one response
        runs = [
            ("official list_namespaced_pod, typed V1Pod", NS_SMALL, "typed", SMALL, default),
            (DEFAULT_LABEL, NS_SMALL, "default", SMALL, default),
            (RV0_LABEL, NS_SMALL, "default", SMALL, rv0),
            (
                "pyinformers informer, managedFields kept",
                NS_SMALL,
                "keep-managed-fields",
                SMALL,
                default,
            ),
            (DEFAULT_LABEL, NS_LARGE, "default", LARGE, default),
            (RV0_LABEL, NS_LARGE, "default", LARGE, rv0),
            (
                "pyinformers informer, default, GC running during the fill",
                NS_LARGE,
                "gc-running",
                LARGE,
                default,
            ),
        ]
        if QUICK:  # BENCH_QUICK=1: the 10,000-Pod runs only
            runs = [run for run in runs if run[3] == SMALL]
        results = []
        for label, namespace, variant, count, options in runs:
            result = _run(server.kubeconfig, namespace, variant, count, options)
            results.append((label, count, result))
            print(f"  measured {label} ({count:,}): {result['seconds']:.2f}s", flush=True)
        ceilings = {SMALL: server_ceiling(server.kubeconfig, NS_SMALL)}
        if not QUICK:
            ceilings[LARGE] = server_ceiling(server.kubeconfig, NS_LARGE)
    typed = results[0][2]
    typed_rate = SMALL / typed["seconds"]
    typed_cpu_rate = SMALL / typed["cpu_seconds"]
    typed_bytes = typed["bytes_per_object"]
    print()
    header = (
        f"{'initial sync':<58}  {'objects':>7}  {'seconds':>7}  {'objects/s':>9}  {'x typed':>7}  "
        f"{'CPU s':>6}  {'x typed':>7}  "
        f"{'live B/obj':>10}  {'x typed':>7}  {'RSS KB/obj':>10}  {'peak/final':>10}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for label, count, result in results:
        rate = count / result["seconds"]
        rss_kb = result["final_growth_mb"] * 1000 / count
        peak_ratio = result["peak_growth_mb"] / max(result["final_growth_mb"], 1e-9)
        cpu_rate = count / result["cpu_seconds"]
        rows.append(
            {
                "label": label,
                "objects": count,
                "seconds": result["seconds"],
                "objects_per_s": rate,
                "cpu_seconds": result["cpu_seconds"],
                "x_typed_cpu": cpu_rate / typed_cpu_rate,
                "x_typed": rate / typed_rate,
                "live_bytes_per_object": result["bytes_per_object"],
                "rss_kb_per_object": rss_kb,
                "peak_over_final": peak_ratio,
                "peak_growth_mb": result["peak_growth_mb"],
                "final_growth_mb": result["final_growth_mb"],
            }
        )
        print(
            f"{label:<58}  {count:>7,}  {result['seconds']:>7.2f}  {rate:>9,.0f}  {rate / typed_rate:>6.1f}x  "
            f"{result['cpu_seconds']:>6.2f}  {cpu_rate / typed_cpu_rate:>6.1f}x  "
            f"{result['bytes_per_object']:>10,.0f}  {result['bytes_per_object'] / typed_bytes:>6.2f}x  "
            f"{rss_kb:>10.1f}  {peak_ratio:>9.2f}x"
        )
    by_run = {(label, count): result for label, count, result in results}
    large = by_run.get((DEFAULT_LABEL, LARGE), {})
    gc_running = by_run.get(
        ("pyinformers informer, default, GC running during the fill", LARGE), {}
    )
    if not QUICK:
        print()
        print(
            f"GC pause during the fill: 100,000 Pods sync in {large['seconds']:.1f}s with it, "
            f"{gc_running['seconds']:.1f}s without ({gc_running['seconds'] / large['seconds']:.1f}x slower)."
        )
        print(
            f"After the sync ({large['tracked_objects']:,} GC-tracked objects): a full gc.collect() takes "
            f"{large['collect_seconds'] * 1000:.0f} ms; after gc.freeze() {large['collect_frozen_seconds'] * 1000:.0f} ms."
        )
    for count in (SMALL, LARGE)[: len(ceilings)]:
        print(
            f"Server ceiling, a streaming list of {count:,} Pods read as raw bytes up to its end bookmark "
            f"(nothing decoded): {ceilings[count]:.2f}s = {count / ceilings[count]:,.0f} objects/s."
        )
    print(
        "Defaults: a streaming list (watch with sendInitialEvents), each object transformed as it is decoded."
    )
    print(
        "List resourceVersion=0: the list path (use_watch_list=False, and the fallback for servers without"
    )
    print(
        "streaming lists); the server answers it from its watch cache in one response, whatever the limit."
    )
    print(
        "CPU s: process CPU time of the sync, all threads (robust on a loaded machine); its x typed compares"
    )
    print("objects per CPU-second.")
    print("live B/obj: deep size of the cached objects (typed: the V1Pod models) per object.")
    print(
        "RSS KB/obj: RSS growth over the list, after the sync, per object (aim <= 17 KB); peak/final: the peak"
    )
    print(
        "RSS growth during the sync over that final growth (aim <= 1.3x). 100,000-object ratios use the typed"
    )
    print("10,000 rate (the typed list's per-object rate does not improve with size).")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "initial_sync.json").write_text(
        json.dumps(
            {
                "rows": rows,
                "ceilings": {str(k): k / v for k, v in ceilings.items()},
                "collect_ms": large.get("collect_seconds", 0) * 1000,
                "collect_frozen_ms": large.get("collect_frozen_seconds", 0) * 1000,
                "gc_running_seconds": gc_running.get("seconds"),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
