"""Write the benchmark report: ``benchmarks/report/README.md`` and its PNG charts.

Reads what the benchmarks wrote to ``benchmarks/report/results/*.json``
(``pipeline``, ``initial_sync``, ``workqueue``, and through
:mod:`benchmarks.report_e2e` ``e2e``, ``writes``, ``startup``, ``shard_caches``; a missing one is left out)
and renders the tables plus charts with matplotlib (the ``bench`` extra):

* ``throughput.png`` -- events/s of every consumer, with the range of the rounds;
* ``cpu_per_event.png`` -- CPU microseconds per event of every consumer;
* ``sync.png`` -- initial sync time and RSS per object against object count;
* ``latency.png`` -- the distribution of send -> reconcile-start latency.

``python -m benchmarks.report`` re-renders from the stored results.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPORT = HERE / "report"
RESULTS = REPORT / "results"


def _load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _plt() -> Any:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bar_chart(plt: Any, rows: list[dict], field: str, title: str, xlabel: str, path: Path) -> None:
    rows = [r for r in rows if not r.get("skipped")]
    labels = [r["label"] for r in rows]
    med = [r[field]["median"] for r in rows]
    low = [m - r[field]["min"] for m, r in zip(med, rows)]
    high = [r[field]["max"] - m for m, r in zip(med, rows)]
    colors = [
        "#1f77b4"
        if r["consumer"].startswith("pyinformers")
        else "#2ca02c"
        if r["consumer"] == "client-go"
        else "#7f7f7f"
        for r in rows
    ]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2))
    y = range(len(rows))
    ax.barh(list(y), med, xerr=[low, high], color=colors, capsize=3)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    for i, (m, r) in enumerate(zip(med, rows)):  # the median, right of the range's bar
        ax.text(r[field]["max"], i, f"  {m:,.0f}", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sync_chart(plt: Any, sync: dict, pipeline: dict | None, path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    series: dict[str, list[tuple[int, dict]]] = {}
    for row in sync["rows"]:
        series.setdefault(row["label"], []).append((row["objects"], row))
    for label, points in series.items():
        points.sort(key=lambda p: p[0])
        xs = [p[0] for p in points]
        style = "o-" if len(xs) > 1 else "s"
        left.plot(xs, [p[1]["seconds"] for p in points], style, label=label)
        right.plot(xs, [p[1]["rss_kb_per_object"] for p in points], style, label=label)
    right.axhline(17, color="red", linestyle=":", linewidth=1, label="goal: 17 KB")
    for ax, ylabel in ((left, "initial sync, seconds"), (right, "RSS after sync, KB per object")):
        ax.set_xscale("log")
        ax.set_xlabel("objects")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    left.set_yscale("log")
    right.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _latency_chart(plt: Any, latency: dict, path: Path) -> None:
    delays = latency["delays_ms"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    left.hist(delays, bins=60, color="#1f77b4")
    left.set_xlabel("server sends -> reconcile starts, ms")
    left.set_ylabel("events")
    n = len(delays)
    right.plot(delays, [(i + 1) / n for i in range(n)])
    right.axvline(10, color="red", linestyle=":", linewidth=1, label="goal: p99 <= 10 ms")
    right.axhline(0.99, color="grey", linestyle=":", linewidth=1)
    right.set_xscale("log")
    right.set_xlabel("ms (log)")
    right.set_ylabel("cumulative fraction")
    right.legend(fontsize=7)
    fig.suptitle(
        f"latency at {latency['rate']:.0f} events/s: p50 {latency['p50']:.1f} ms, "
        f"p99 {latency['p99']:.1f} ms",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _throughput_table(data: dict) -> list[str]:
    lines = [
        "| consumer | events read | events/s (range) | × typed watch | CPU µs/event (range) | cores | "
        "longest GC pause | full GCs per run | RSS KB/Pod after sync |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        if r.get("skipped"):
            lines.append(f"| {r['label']} | skipped | | | | | | | |")
            continue
        e, c, x = r["events_per_s"], r["cpu_us_per_event"], r["x_baseline"]
        gc_ms = f"{r['gc_max_pause_ms']:.0f} ms" if r["gc_full_collections"] else "n/a"
        full = ", ".join(map(str, r["gc_full_collections"])) or "n/a"
        rss = f"{r['rss_kb_per_object']:.1f}" if r.get("rss_kb_per_object") else "n/a"
        lines.append(
            f"| {r['label']} | {r.get('events', 0):,} | {e['median']:,.0f} ({e['min']:,.0f}-{e['max']:,.0f}) | "
            f"{x['median']:.2f} ({x['min']:.2f}-{x['max']:.2f}) | {c['median']:.0f} "
            f"({c['min']:.0f}-{c['max']:.0f}) | {r['cores']['median']:.2f} | {gc_ms} | {full} | {rss} |"
        )
    return lines


def _median_range(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _comparisons(data: dict) -> list[str]:
    by = {r["consumer"]: r for r in data["rows"] if not r.get("skipped")}
    ours = by.get("pyinformers")
    lines = []
    if ours is None:
        return lines
    for name, what in (
        ("client-go", "client-go"),
        ("minimal", "the minimal Python pipeline"),
        ("typed-watch", "typed `watch.Watch`"),
    ):
        other = by.get(name)
        if other is None:
            continue
        # Round by round: the host's speed drifts between rounds, and every consumer of a round
        # shares it, so a ratio within a round is steadier than a ratio of medians.
        pairs = list(zip(ours["runs"], other["runs"]))
        rate = _median_range([o["events_per_s"] / t["events_per_s"] for o, t in pairs])
        per_core = _median_range([t["cpu_us_per_event"] / o["cpu_us_per_event"] for o, t in pairs])
        lines.append(
            f"- pyinformers defaults against {what}, taken round by round: {rate} the events/s; "
            f"per core {per_core} its events per CPU-second (its CPU per event over ours)."
        )
    manager = data.get("manager_vs_defaults")
    if manager:
        e, c = manager["events_per_s"], manager["cpu_us_per_event"]
        lines.append(
            f"- The Controller run by a `Manager` with its defaults (GC policy, `/metrics` and probes served, "
            f"`run()`) against factory + Controller, pair by pair over {manager['pairs']} pairs (each round's "
            f"and {manager['pairs'] // max(1, data['rounds']) - 1} more per round, run back to back): "
            f"{e['median']:.2f}x ({e['min']:.2f}-{e['max']:.2f}) the events/s, "
            f"{c['median']:.2f}x ({c['min']:.2f}-{c['max']:.2f}) the CPU per event."
        )
    paired = data.get("ten_vs_one")
    if paired:
        e, c = paired["events_per_s"], paired["cpu_us_per_event"]
        switches = paired["switches_per_event"]
        lines.append(
            f"- Ten informers (ten namespaces of 1,000 Pods) against one informer of 10,000, taken round by "
            f"round: {e['median']:.2f}x ({e['min']:.2f}-{e['max']:.2f}) the aggregate events/s, "
            f"{c['median']:.2f}x ({c['min']:.2f}-{c['max']:.2f}) the CPU per event; context switches per "
            f"event {switches['ten']['median']:.2f} against {switches['one']['median']:.2f}."
        )
    return lines


def _tls_cost(plain: dict, tls: dict) -> list[str]:
    """What TLS adds per event for the consumers measured both ways (medians of separate runs)."""
    plain_rows = {r["consumer"]: r for r in plain["rows"] if not r.get("skipped")}
    lines = []
    for row in tls["rows"]:
        other = plain_rows.get(row["consumer"])
        if row.get("skipped") or other is None:
            continue
        ours, theirs = row["cpu_us_per_event"]["median"], other["cpu_us_per_event"]["median"]
        lines.append(
            f"- {row['label']}: {ours:.0f} µs CPU per event over TLS against {theirs:.0f} over plain HTTP "
            f"({ours / theirs:.2f}x; medians of separate runs)."
        )
    return lines


def write() -> Path:
    """Render the report from the stored results; returns the README's path."""
    REPORT.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    pipeline, sync, queues = _load("pipeline"), _load("initial_sync"), _load("workqueue")
    out = [
        "# pyinformers benchmark report",
        "",
        f"Written by `make bench` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"CPython {platform.python_version()}, {platform.machine()}.",
        "",
    ]
    if pipeline is not None:
        machine = pipeline.get("machine", {})
        out.append(
            f"Machine: {machine.get('cpus')} CPUs; load average before/after the pipeline benchmark "
            f"{machine.get('load_before', [0])[0]:.1f} / {machine.get('load_after', [0])[0]:.1f}. "
            "Absolute rates follow the load; CPU µs per event (process CPU time of all threads) "
            "is the robust figure."
        )
        out.append("")
    if plt is None:
        out += ["*(matplotlib is not installed: `pip install -e '.[bench]'` for the charts)*", ""]
    if pipeline is not None:
        t = pipeline["throughput"]
        out += [
            "## Watch pipeline: what users run, against every anchor",
            "",
            f"A server in its own process serves {t['pods']:,} pre-serialised 5.1 KB Pods (two managedFields "
            f"entries) and {t['events']:,} `MODIFIED` events at full speed; each consumer runs in a fresh "
            "process, syncs its cache, reconciles the initial keys, then starts its clocks and releases the "
            f"events. Median of {t['rounds']} interleaved round(s), odd rounds in reverse order, range in brackets; ratios are taken per round.",
            "",
            *_throughput_table(t),
            "",
            *_comparisons(t),
            "",
        ]
        if plt is not None:
            _bar_chart(
                plt,
                t["rows"],
                "events_per_s",
                "watch events per second (log scale)",
                "events/s",
                REPORT / "throughput.png",
            )
            _bar_chart(
                plt,
                t["rows"],
                "cpu_us_per_event",
                "CPU microseconds per event, all threads (log scale)",
                "µs CPU per event",
                REPORT / "cpu_per_event.png",
            )
            out += [
                "![events per second](throughput.png)",
                "",
                "![CPU per event](cpu_per_event.png)",
                "",
            ]
        tls = pipeline.get("tls")
        if tls:
            out += [
                "## The same over TLS, as clusters serve it",
                "",
                f"The same {tls['pods']:,} Pods and {tls['events']:,} events from an HTTPS server that writes one "
                "event per chunk and per write, as kube-apiserver does. A TLS read returns at most one record, "
                "so a reader that handles what one read returns handles one event per read, waking its worker "
                "and passing the GIL each time; over plain HTTP one read takes whatever the socket holds. "
                "pyinformers reads on while records are already there. "
                f"Median of {tls['rounds']} interleaved round(s).",
                "",
                *_throughput_table(tls),
                "",
                *_comparisons(tls),
                *_tls_cost(t, tls),
                "",
            ]
        lat = pipeline.get("latency")
        if lat:
            out += [
                "## Latency",
                "",
                f"Server sends an event -> the reconcile that reads it starts, pyinformers defaults, "
                f"{lat['rate']:.0f} events/s over 1,000 cached Pods, {lat['samples']:,} samples: "
                f"p50 {lat['p50']:.1f} ms, p90 {lat['p90']:.1f} ms, **p99 {lat['p99']:.1f} ms** "
                f"(goal <= 10 ms), max {lat['max']:.1f} ms.",
                "",
            ]
            if plt is not None:
                _latency_chart(plt, lat, REPORT / "latency.png")
                out += ["![latency](latency.png)", ""]
        big = pipeline.get("large")
        if big:
            out += [
                "## 100,000 cached Pods, defaults",
                "",
                f"Sync {big['sync_seconds']:.1f} s; RSS {big['rss_kb_per_object']:.1f} KB per cached Pod; over "
                f"{big['events']:,} events: {big['events_per_s']:,.0f} events/s, {big['cpu_us_per_event']:.0f} µs "
                f"CPU per event, GC collections per generation {big['gc_collections']}, **longest GC pause "
                f"{big['gc_max_pause_ms']:.0f} ms** (goal <= 50 ms).",
                "",
            ]
    if sync is not None:
        out += [
            "## Initial sync and memory",
            "",
            "| initial sync | objects | seconds | objects/s | × typed | CPU s | × typed (CPU) | live bytes/object | "
            "RSS KB/object | peak/final RSS |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sync["rows"]:
            cpu = (
                f"{r['cpu_seconds']:.2f} | {r['x_typed_cpu']:.1f}"
                if "cpu_seconds" in r
                else "n/a | n/a"
            )
            out.append(
                f"| {r['label']} | {r['objects']:,} | {r['seconds']:.2f} | {r['objects_per_s']:,.0f} | "
                f"{r['x_typed']:.1f} | {cpu} | {r['live_bytes_per_object']:,.0f} | "
                f"{r['rss_kb_per_object']:.1f} | {r['peak_over_final']:.2f} |"
            )
        out.append("")
        if sync.get("collect_ms"):
            out += [
                f"A full `gc.collect()` after syncing 100,000 Pods: {sync['collect_ms']:.0f} ms; after "
                f"`gc.freeze()`: {sync['collect_frozen_ms']:.0f} ms.",
                "",
            ]
        if plt is not None:
            _sync_chart(plt, sync, pipeline, REPORT / "sync.png")
            out += ["![sync time and RSS per object](sync.png)", ""]
    memory = _load("cache_memory")
    if memory is not None:
        out += [
            "## What a cache costs: full, metadata-only, with the mutation detector",
            "",
            "10,000 objects per informer (and 100,000 Pods unless `BENCH_QUICK`), each measurement "
            "in a fresh process; RSS growth per cached "
            "object after the sync, median (min-max) of the rounds; ratios per round "
            "(`benchmarks/bench_cache_memory.py`).",
            "",
            "| cache of | RSS KB/object | sync CPU s | estimate / live |",
            "|---|---|---|---|",
        ]
        for row in memory["rows"]:
            out.append(
                f"| {row['label']} | {_spread(row['rss_kb_per_object'])} | "
                f"{_spread(row['cpu_seconds'])} | {sorted(row['estimate_over_live'])[len(row['estimate_over_live']) // 2]:.2f}x |"
            )
        out += [
            "",
            *[f"- {name}: {_median_range(values)}" for name, values in memory["ratios"].items()],
            "",
        ]
    if queues is not None:
        out += [
            "## Work queues",
            "",
            f"Median of {queues.get('repeats', 5)} alternating repetitions; the ratio (ours / baseline ops/s) "
            "is taken per repetition, range in brackets; the CPU ratio is baseline / ours process CPU time "
            "(all threads).",
            "",
            "| scenario | ours, ops/s | baseline, ops/s | ratio | CPU ratio | baseline |",
            "|---|---|---|---|---|---|",
        ]
        for r in queues["rows"]:
            spread = f" ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})" if "ratio_min" in r else ""
            cpu = f"{r['cpu_ratio']:.2f}" if "cpu_ratio" in r else "-"
            out.append(
                f"| {r['label']} | {r['ours']:,.0f} | {r['baseline']:,.0f} | {r['ratio']:.2f}{spread} | "
                f"{cpu} | {r['baseline_label']} |"
            )
        out.append("")
    from benchmarks import report_e2e

    out += report_e2e.e2e_lines(_load("e2e"))
    out += report_e2e.writes_lines(_load("writes"))
    out += report_e2e.startup_lines(_load("startup"))
    out += report_e2e.shard_caches_lines(_load("shard_caches"))
    out += [
        "## Reproduce",
        "",
        "```",
        "make bench                   # everything: about 10 minutes on 2 idle cores, and about 30 more",
        "                             # with the real control plane's binaries (bench_e2e, bench_shard_caches)",
        "make bench BENCH=bench_pipeline   # one benchmark (the report keeps the others' last results)",
        "make bench BENCH_QUICK=1     # one round, no 100,000-Pod scenario",
        "```",
        "",
    ]
    readme = REPORT / "README.md"
    readme.write_text("\n".join(out))
    return readme


if __name__ == "__main__":
    print(write())
