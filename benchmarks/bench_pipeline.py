"""The watch pipeline users run, against every anchor, on one server in its own process.

A benchmark server (:mod:`benchmarks.watchserver`, a child process with its
own core) holds 10,000 realistic 5.1 KB Pods (two managedFields entries) and
20,000 pre-serialised ``MODIFIED`` events of them. Each consumer runs in a
fresh process, syncs its cache, reconciles the initial keys, then starts its
clocks and releases the events, which the server writes as fast as the
consumer reads them (:mod:`benchmarks.consumers`):

* **pyinformers, defaults** -- ``SharedInformerFactory(api_client)`` and a
  ``Controller`` subclass with one worker, as the quickstart shows;
* the same ``Controller`` run by a ``Manager`` with its defaults
  (``manager.run()``, its GC policy, ``/metrics`` and probes served), compared
  with the defaults round by round; ten informers (ten namespaces of 1,000
  Pods, one controller) against one;
* typed ``watch.Watch().stream`` (the baseline, 1.0x), the official
  ``kubernetes.informer.SharedInformer`` feeding a ``queue.Queue`` and a
  worker, kopf (in its own virtual environment), a minimal hand-written
  Python pipeline, and **client-go** (``benchmarks/clientgo``: a
  SharedInformer, a rate-limiting work queue, one worker).

Rounds interleave the consumers; every figure is the median of the rounds
with the range. Reported per consumer: events/s, CPU microseconds per event
(process CPU time of all threads: robust on a shared machine), cores used
(CPU time / wall time), the cyclic GC's longest pause and full collections
in the timed window, and RSS per cached Pod after the sync.

Then the same events **over TLS**, as clusters serve them, for ours, the
minimal pipeline, the baseline and client-go: a TLS read returns at most one
record, and the server writes one event per record, as kube-apiserver does.
Then two scenarios of their own: the **latency** from the server sending an
event to the start of the reconcile that reads it, at 500 events/s; and
**100,000 cached Pods** with defaults (sync time, RSS per Pod, the longest GC
pause over 100,000 events).

``BENCH_QUICK=1`` runs one round and skips the 100,000-Pod scenario.
Results go to ``benchmarks/report/results/pipeline.json``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import gobuild
from benchmarks.watchserver import WatchServer

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "report" / "results"
CACHE = HERE / ".cache"
KOPF_VENV = HERE / ".venv-kopf"

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
PODS = 10_000
EVENTS = 20_000
ROUNDS = 1 if QUICK else 5
LARGE_PODS = 100_000
LATENCY_RATE = 500.0
LATENCY_EVENTS = 3_000
SPLIT = 10  # the ten-informer variant: namespaces bench-0 .. bench-9

# label, consumer, namespaces
CONSUMERS: list[tuple[str, str, list[str]]] = [
    ("pyinformers: factory + Controller, defaults", "pyinformers", ["bench"]),
    # next to the defaults: the two are compared round by round, so they run back to back
    (
        "pyinformers, 10 informers x 1,000 Pods",
        "pyinformers-10-informers",
        [f"bench-{k}" for k in range(SPLIT)],
    ),
    (
        "pyinformers: the same Controller run by a Manager, defaults",
        "pyinformers-manager",
        ["bench"],
    ),
    ("minimal Python pipeline (urllib3+orjson+dict+queue)", "minimal", ["bench"]),
    ("typed watch.Watch().stream (baseline)", "typed-watch", ["bench"]),
    ("kubernetes.informer + queue.Queue + worker", "official-informer", ["bench"]),
    ("kopf, no-op on.event handler", "kopf", ["bench"]),
    ("client-go: SharedInformer + workqueue + worker", "client-go", ["bench"]),
]
BASELINE = "typed-watch"
#: Over TLS: ours, the minimal pipeline, the baseline and client-go (kopf and the official informer
#: read through the same official client as the baseline, and cost as much more over TLS).
TLS_CONSUMERS = [
    row for row in CONSUMERS if row[1] in ("pyinformers", "minimal", "typed-watch", "client-go")
]
TLS_ROUNDS = 1 if QUICK else 3
#: The Manager against factory + Controller: besides the pair each round holds, this many more
#: back-to-back pairs per round (order alternating), for the paired comparison alone (the rows keep
#: one run per round). The two differ by far less than the spread between rounds on a shared machine,
#: so their ratio needs more pairs than the rows need rounds.
MANAGER_PAIR = ("pyinformers", "pyinformers-manager")
EXTRA_PAIRS = 2 if QUICK else 3
#: Anchors slower than 1 ms per event read a quarter of the events (rates are per event, so
#: comparable); this keeps a round, and make bench, within minutes.
SLOW = {"typed-watch": EVENTS // 4, "official-informer": EVENTS // 4, "kopf": EVENTS // 4}


# --------------------------------------------------------------------------- the anchors' programs
def build_clientgo() -> Path | None:
    """Build benchmarks/clientgo with the machine's Go (modules from the proxy); cached. None without Go."""
    return gobuild.build("clientgo", "clientgo-bench", what="the client-go anchor")


def kopf_python() -> Path | None:
    """The Python of benchmarks/.venv-kopf, made and given kopf on first use. None if pip cannot."""
    python = KOPF_VENV / "bin" / "python"
    if (KOPF_VENV / ".installed").exists():
        return python
    print("  installing kopf into benchmarks/.venv-kopf ...", flush=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(KOPF_VENV)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "kopf"],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        detail = getattr(error, "stderr", b"") or b""
        print(
            f"  kopf anchor skipped: pip could not install kopf ({detail.decode(errors='replace')[-300:]})",
            flush=True,
        )
        return None
    (KOPF_VENV / ".installed").touch()
    return python


# --------------------------------------------------------------------------- running one consumer
def target(info: dict, events: int) -> dict:
    """``info`` (a namespace of the server) with its last event moved to event number ``events``."""
    info = dict(info)
    if events < info["events"]:
        pods = info["pods"]
        name = f"web-7d4b9c8f6d-{(events - 1) % pods:06d}"  # event k modifies Pod (k-1) % pods
        info.update(
            events=events,
            last_rv=str(int(info["list_rv"]) + events),
            last_key=info["last_key"].split("/")[0] + "/" + name,
        )
    return info


def run_consumer(
    consumer: str,
    server: WatchServer,
    namespaces: list[str],
    *,
    clientgo: Path | None,
    kopf: Path | None,
    timeout: float = 900,
    events: int | None = None,
) -> dict | None:
    """Run ``consumer`` in a fresh process against ``server`` (stopping after ``events`` events of
    each namespace when given); its RESULT dict (None when skipped)."""
    server.rearm()
    plan = {
        "namespaces": {
            ns: target(server.namespaces[ns], events or server.namespaces[ns]["events"])
            for ns in namespaces
        }
    }
    env = dict(os.environ)
    if server.ca_file:
        env["BENCH_CA"] = server.ca_file
    with tempfile.TemporaryDirectory() as tmp:
        if consumer == "client-go":
            if clientgo is None:
                return None
            ((ns, info),) = plan["namespaces"].items()
            command = [
                str(clientgo),
                "-server",
                server.url,
                "-namespace",
                ns,
                "-objects",
                str(info["pods"]),
                "-last-key",
                info["last_key"],
                "-last-rv",
                info["last_rv"],
            ]
            if server.ca_file:
                command += ["-ca", server.ca_file]
            # client-go 1.35+ syncs with a streaming list by default, as pyinformers does: keep its default.
        elif consumer == "kopf":
            if kopf is None:
                return None
            kubeconfig = Path(tmp) / "kubeconfig"
            kubeconfig.write_text(json.dumps(server.kubeconfig()))
            ((ns, _info),) = plan["namespaces"].items()
            env.update(
                KUBECONFIG=str(kubeconfig), BENCH_PLAN=json.dumps(plan), BENCH_SERVER=server.url
            )
            command = [
                str(kopf.parent / "kopf"),
                "run",
                "--standalone",
                "--namespace",
                ns,
                "--quiet",
                str(HERE / "kopf_consumer.py"),
            ]
        else:
            command = [
                sys.executable,
                "-m",
                "benchmarks.consumers",
                consumer,
                "--server",
                server.url,
                "--plan",
                json.dumps(plan),
            ]
            env["PYTHONPATH"] = str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", "")
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{consumer}: no result within {timeout:.0f}s") from None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
        if line.startswith("{") and consumer == "client-go" and proc.returncode == 0:
            return json.loads(line)
    raise RuntimeError(
        f"{consumer} failed (exit {proc.returncode}):\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}"
    )


def _derive(result: dict, events: int, objects: int) -> dict:
    result = dict(result)
    result["events"] = events
    result["events_per_s"] = events / result["wall"]
    result["cpu_us_per_event"] = result["cpu"] / events * 1e6
    result["cores"] = result["cpu"] / result["wall"]
    if "rss_synced_kb" in result:
        result["rss_kb_per_object"] = (
            result["rss_synced_kb"] - result.get("rss_base_kb", 0)
        ) / objects
    return result


def _summary(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": values,
    }


# --------------------------------------------------------------------------- scenarios
def throughput(clientgo: Path | None, kopf: Path | None) -> dict:
    plan = {"namespaces": {"bench": {"pods": PODS, "events": EVENTS}}}
    for k in range(SPLIT):
        plan["namespaces"][f"bench-{k}"] = {"pods": PODS // SPLIT, "events": EVENTS // SPLIT}
    runs: dict[str, list[dict]] = {consumer: [] for _, consumer, _ in CONSUMERS}
    pairs: dict[str, list[dict]] = {consumer: [] for consumer in MANAGER_PAIR}
    with WatchServer(plan) as server:
        print(
            f"server: {PODS:,} Pods of {server.namespaces['bench']['pod_bytes'] / 1000:.1f} KB, "
            f"{EVENTS:,} events; {ROUNDS} interleaved round(s), each consumer in a fresh process",
            flush=True,
        )
        for round_ in range(ROUNDS):
            # Odd rounds run the consumers in reverse: a consumer run later in a round tends to be
            # slower (measured: the second of a pair 0.89-0.90x when run second, 0.99-1.03x when
            # run first), so no row always runs last, and the pairs compared per round swap places.
            order = CONSUMERS if round_ % 2 == 0 else CONSUMERS[::-1]
            for _label, consumer, namespaces in order:
                events = SLOW.get(consumer, EVENTS)
                per_namespace = events // len(namespaces)
                result = run_consumer(
                    consumer, server, namespaces, clientgo=clientgo, kopf=kopf, events=per_namespace
                )
                if result is not None:
                    runs[consumer].append(_derive(result, per_namespace * len(namespaces), PODS))
            for k in range(EXTRA_PAIRS):
                for consumer in MANAGER_PAIR[::-1] if (round_ + k) % 2 == 0 else MANAGER_PAIR:
                    result = run_consumer(consumer, server, ["bench"], clientgo=clientgo, kopf=kopf)
                    pairs[consumer].append(_derive(result, EVENTS, PODS))
            print(f"  round {round_ + 1}/{ROUNDS} done", flush=True)
    return {
        "pods": PODS,
        "events": EVENTS,
        "rounds": ROUNDS,
        "rows": _rows(CONSUMERS, runs),
        "ten_vs_one": _paired(runs["pyinformers-10-informers"], runs["pyinformers"]),
        "manager_vs_defaults": _ratios(*(runs[c] + pairs[c] for c in MANAGER_PAIR[::-1])),
    }


def over_tls(clientgo: Path | None) -> dict:
    """The same Pods and events over HTTPS, written one event per write as kube-apiserver writes them.

    Real clusters serve TLS, and a TLS read returns at most one record: with
    one event per record a Python reader makes a read (and a GIL release) per
    event, where over plain HTTP one read takes whatever the socket holds.
    """
    from pyinformers.testing.apiserver._tls import self_signed_certificate

    runs: dict[str, list[dict]] = {consumer: [] for _, consumer, _ in TLS_CONSUMERS}
    with tempfile.TemporaryDirectory() as tmp:
        plan = {
            "namespaces": {"bench": {"pods": PODS, "events": EVENTS}},
            "tls": list(self_signed_certificate(tmp)),
        }
        with WatchServer(plan) as server:
            print(f"over TLS: {TLS_ROUNDS} interleaved round(s)", flush=True)
            for round_ in range(TLS_ROUNDS):
                for _label, consumer, namespaces in (
                    TLS_CONSUMERS if round_ % 2 == 0 else TLS_CONSUMERS[::-1]
                ):
                    events = SLOW.get(consumer, EVENTS)
                    result = run_consumer(
                        consumer, server, namespaces, clientgo=clientgo, kopf=None, events=events
                    )
                    if result is not None:
                        runs[consumer].append(_derive(result, events, PODS))
    return {
        "pods": PODS,
        "events": EVENTS,
        "rounds": TLS_ROUNDS,
        "rows": _rows(TLS_CONSUMERS, runs),
    }


def _rows(consumers: list[tuple[str, str, list[str]]], runs: dict[str, list[dict]]) -> list[dict]:
    """A row per consumer: medians and ranges of its runs, and its ratio to the baseline's run of each round."""
    rows = []
    baseline_runs = runs[BASELINE]
    for label, consumer, _ in consumers:
        results = runs[consumer]
        if not results:
            rows.append({"label": label, "consumer": consumer, "skipped": True})
            continue
        row: dict[str, Any] = {
            "label": label,
            "consumer": consumer,
            "runs": results,
            "events": results[0]["events"],
        }
        for field in ("events_per_s", "cpu_us_per_event", "cores"):
            row[field] = _summary([r[field] for r in results])
        # ratios per round, against the baseline of the same round
        row["x_baseline"] = _summary(
            [r["events_per_s"] / b["events_per_s"] for r, b in zip(results, baseline_runs)]
        )
        row["gc_max_pause_ms"] = max((r.get("gc_max_pause_ms", 0.0) for r in results), default=0.0)
        row["gc_full_collections"] = [
            r["gc_collections"][2] for r in results if "gc_collections" in r
        ]
        if any("rss_kb_per_object" in r for r in results):
            row["rss_kb_per_object"] = statistics.median(
                r["rss_kb_per_object"] for r in results if "rss_kb_per_object" in r
            )
        row["sync_seconds"] = (
            statistics.median(r["sync_seconds"] for r in results if "sync_seconds" in r)
            if any("sync_seconds" in r for r in results)
            else None
        )
        rows.append(row)
    return rows


def _ratios(variant: list[dict], reference: list[dict]) -> dict | None:
    """``variant`` over ``reference``, pair by pair (each pair ran seconds apart, on the same load)."""
    if not variant or len(variant) != len(reference):
        return None
    return {
        "pairs": len(variant),
        "events_per_s": _summary(
            [v["events_per_s"] / r["events_per_s"] for v, r in zip(variant, reference)]
        ),
        "cpu_us_per_event": _summary(
            [v["cpu_us_per_event"] / r["cpu_us_per_event"] for v, r in zip(variant, reference)]
        ),
    }


def _paired(ten: list[dict], one: list[dict]) -> dict | None:
    """Ten informers against one, round by round (the two ran back to back, on the same load)."""
    ratios = _ratios(ten, one)
    if ratios is None:
        return None

    def switches(r: dict) -> float:
        return sum(r["context_switches"]) / r["events"]

    ratios["switches_per_event"] = {
        "ten": _summary([switches(t) for t in ten]),
        "one": _summary([switches(o) for o in one]),
    }
    return ratios


def latency() -> dict:
    plan = {
        "namespaces": {"latency": {"pods": 1_000, "events": LATENCY_EVENTS, "pace": LATENCY_RATE}}
    }
    delays: list[float] = []
    with WatchServer(plan) as server:
        for _ in range(ROUNDS):
            result = run_consumer("latency", server, ["latency"], clientgo=None, kopf=None)
            delays.extend(
                result["latency_ms"][len(result["latency_ms"]) // 10 :]
            )  # skip the warm-up tenth
    delays.sort()

    def pct(p: float) -> float:
        return delays[min(len(delays) - 1, int(p / 100 * len(delays)))]

    return {
        "rate": LATENCY_RATE,
        "events": LATENCY_EVENTS,
        "samples": len(delays),
        "p50": pct(50),
        "p90": pct(90),
        "p99": pct(99),
        "max": delays[-1],
        "delays_ms": delays,
    }


def large() -> dict:
    plan = {"namespaces": {"large": {"pods": LARGE_PODS, "events": LARGE_PODS}}}
    with WatchServer(plan) as server:
        result = run_consumer(
            "pyinformers", server, ["large"], clientgo=None, kopf=None, timeout=1200
        )
    return _derive(result, LARGE_PODS, LARGE_PODS)


# --------------------------------------------------------------------------- printing
def print_throughput(data: dict) -> None:
    rows = data["rows"]
    width = max(len(r["label"]) for r in rows)
    print()
    print(
        f"{'consumer':<{width}}  {'events/s':>9}  {'range':>15}  {'x typed':>7}  {'CPU us/ev':>9}  "
        f"{'range':>11}  {'cores':>5}  {'GC max ms':>9}  {'full GCs':>8}  {'RSS KB/Pod':>10}"
    )
    for r in rows:
        if r.get("skipped"):
            print(f"{r['label']:<{width}}  skipped (see above)")
            continue
        e, c = r["events_per_s"], r["cpu_us_per_event"]
        rss = f"{r['rss_kb_per_object']:.1f}" if r.get("rss_kb_per_object") else "-"
        gc_ms = f"{r['gc_max_pause_ms']:.0f}" if r["gc_full_collections"] else "-"
        full = ",".join(map(str, r["gc_full_collections"])) or "-"
        print(
            f"{r['label']:<{width}}  {e['median']:>9,.0f}  {e['min']:>7,.0f}-{e['max']:<7,.0f}  "
            f"{r['x_baseline']['median']:>6.1f}x  {c['median']:>9.0f}  {c['min']:>5.0f}-{c['max']:<5.0f}  "
            f"{r['cores']['median']:>5.2f}  {gc_ms:>9}  {full:>8}  {rss:>10}"
        )
    by = {r["consumer"]: r for r in rows if not r.get("skipped")}
    ours = by.get("pyinformers")
    if ours:
        for name, what in (("client-go", "client-go"), ("minimal", "the minimal pipeline")):
            if name in by:
                other = by[name]
                print(
                    f"pyinformers defaults vs {what}: {ours['events_per_s']['median'] / other['events_per_s']['median']:.2f}x "
                    f"events/s, {ours['cpu_us_per_event']['median'] / other['cpu_us_per_event']['median']:.2f}x "
                    f"CPU per event (per core: {other['cpu_us_per_event']['median'] / ours['cpu_us_per_event']['median']:.2f}x "
                    "its events per CPU-second)"
                )
        paired = data.get("manager_vs_defaults")
        if paired:
            e, c = paired["events_per_s"], paired["cpu_us_per_event"]
            print(
                f"the Manager vs factory + Controller, {paired['pairs']} pairs: {e['median']:.2f}x events/s "
                f"({e['min']:.2f}-{e['max']:.2f}), {c['median']:.2f}x CPU per event ({c['min']:.2f}-{c['max']:.2f})"
            )
        paired = data.get("ten_vs_one")
        if paired:
            e, c = paired["events_per_s"], paired["cpu_us_per_event"]
            print(
                f"10 informers aggregate vs one, per round: {e['median']:.2f}x events/s ({e['min']:.2f}-{e['max']:.2f}), "
                f"{c['median']:.2f}x CPU per event ({c['min']:.2f}-{c['max']:.2f})"
            )


def main() -> dict:
    clientgo = build_clientgo()
    kopf = kopf_python()
    data: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg()},
        "quick": QUICK,
    }
    data["throughput"] = throughput(clientgo, kopf)
    print_throughput(data["throughput"])
    data["tls"] = over_tls(clientgo)
    print_throughput(data["tls"])
    data["latency"] = latency()
    lat = data["latency"]
    print(
        f"\nlatency, server sends -> reconcile starts, {lat['rate']:.0f} events/s over 1,000 cached Pods: "
        f"p50 {lat['p50']:.1f} ms, p90 {lat['p90']:.1f} ms, p99 {lat['p99']:.1f} ms, max {lat['max']:.1f} ms "
        f"({lat['samples']} samples; aim p99 <= 10 ms)"
    )
    if not QUICK:
        big = data["large"] = large()
        print(
            f"\n{LARGE_PODS:,} cached Pods, defaults: sync {big['sync_seconds']:.1f}s, RSS "
            f"{big['rss_kb_per_object']:.1f} KB/Pod after sync; over {LARGE_PODS:,} events: "
            f"{big['events_per_s']:,.0f} events/s, {big['cpu_us_per_event']:.0f} us CPU/event, GC collections "
            f"{big['gc_collections']}, longest GC pause {big['gc_max_pause_ms']:.0f} ms (aim <= 50 ms)"
        )
    data["machine"]["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pipeline.json").write_text(json.dumps(data, indent=1))
    return data


if __name__ == "__main__":
    main()
