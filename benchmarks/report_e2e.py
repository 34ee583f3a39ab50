"""The report's sections for the whole loop: ``e2e``, ``writes`` and ``startup`` results as Markdown lines.

Called by :func:`benchmarks.report.write`; each function returns no lines when
its results file is missing.
"""

from __future__ import annotations

from typing import Any

PHASES = ("create", "scale")


def _x(spread: dict) -> str:
    return f"{spread['median']:.2f}x [{spread['min']:.2f}-{spread['max']:.2f}]"


def _medians(runs: list[dict], phase: str, measure: str) -> float:
    values = sorted(run[phase][measure] for run in runs)
    return values[len(values) // 2]


def _e2e_section(section: dict, title: str) -> list[str]:
    runs: dict[str, list[dict]] = section["runs"]
    out = [
        f"### {title}: {section['foos']:,} Foos, {section['rounds']} round(s)",
        "",
        "| controller | phase | wall s | controller CPU s | API server CPU s | etcd CPU s | controller RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    if "load" in section:  # measured in a run of its own (BENCH_E2E_ONLY)
        start, end = section["load"]
        out[1:1] = ["", f"Load average at the start {start:.1f}, at the end {end:.1f}."]
    for variant, rows in runs.items():
        for phase in PHASES:
            out.append(
                f"| {variant} | {phase} | {_medians(rows, phase, 'wall'):.2f} | {_medians(rows, phase, 'cpu'):.2f} | "
                f"{_medians(rows, phase, 'apiserver_cpu'):.2f} | {_medians(rows, phase, 'etcd_cpu'):.2f} | "
                f"{_medians(rows, phase, 'rss_kb') / 1024:.0f} |"
            )
    out.append("")
    for name, entry in section["ratios"].items():
        out += [
            f"Ratios **{name}**, round by round (median [range]):",
            "",
            "| phase | wall | controller CPU | API server CPU | RSS at the end |",
            "|---|---|---|---|---|",
        ]
        for phase in PHASES:
            out.append(
                f"| {phase} | {_x(entry[f'{phase}_wall'])} | **{_x(entry[f'{phase}_cpu'])}** | "
                f"{_x(entry[f'{phase}_apiserver_cpu'])} | {_x(entry[f'{phase}_rss_kb'])} |"
            )
        out.append("")
    return out


def e2e_lines(data: dict[str, Any] | None) -> list[str]:
    if data is None:
        return []
    out = [
        "## The whole loop, end to end on the real control plane",
        "",
        "kubernetes/sample-controller's scenario on a fresh etcd + kube-apiserver 1.36 per run "
        f"(kube-controller-manager: {'yes' if data.get('kube_controller_manager') else 'no'}): "
        f"{data.get('writers', 8)} writer threads create the Foos, then scale them all; wall to convergence, the "
        "controller's CPU (all threads, /proc) until it is quiet again, its RSS. Go: benchmarks/gocontroller "
        "(client-go, client-side throttle off; `go-protobuf`: protobuf for Deployments and Events); "
        "pyinformers: `python -m samples.sample_controller`. Rounds interleaved, ratios per round. "
        f"Load average at the start of the full run {data.get('load_at_start', [0])[0]:.1f}, at its end "
        f"{data.get('load_at_end', [0])[0]:.1f} (2 shared cores).",
        "",
    ]
    if "main" in data:
        out += _e2e_section(data["main"], "The scenario")
    if "large" in data:
        out += _e2e_section(data["large"], "At scale")
    if "throttle" in data:
        out += _e2e_section(
            data["throttle"], "Client-side throttle (`@QPS,burst`; `@default`: client-go's 5/10)"
        )
    return out


def writes_lines(data: dict[str, Any] | None) -> list[str]:
    if data is None:
        return []
    ops = ("create", "update", "status", "patch", "delete")
    out = [
        "## One write's CPU in the client",
        "",
        f"{data['n']} Deployments (the scenario's) created, replaced, status-written, merge-patched and deleted one "
        "request at a time, each client in a fresh process against one kube-apiserver over TLS; CPU µs per write "
        f"(all threads), median of {data['rounds']} interleaved round(s), and × client-go with JSON per round.",
        "",
        "| client | " + " | ".join(ops) + " |",
        "|---|" + "---|" * len(ops),
    ]
    for client, row in data["table"].items():
        cells = [
            f"{row[op]['cpu_us']:.0f} ({row[op]['vs_client_go_json']['median']:.2f}x)" for op in ops
        ]
        out.append(f"| {client} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def startup_lines(data: dict[str, Any] | None) -> list[str]:
    if data is None:
        return []
    out = [
        "## Start-up: what each dependency costs",
        "",
        f"Fresh interpreters, each importing one more step (median of {data['repeats']}): RSS, what the step adds, "
        "its import time, and the official client's generated models and API modules loaded.",
        "",
        "| step | RSS MB | adds MB | import ms | modules | kubernetes models |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        out.append(
            f"| {row['step']} | {row['rss_mb']:.1f} | {row['adds_mb']:+.1f} | {row['import_seconds'] * 1000:.0f} | "
            f"{row['modules']} | {row['kubernetes_models']} |"
        )
    out.append("")
    return out


def shard_caches_lines(data: dict[str, Any] | None) -> list[str]:
    """``bench_shard_caches``: each shard-cached replica's RSS against one unsharded, moves, overlap."""
    if data is None:
        return []
    whole = data["whole"]
    out = [
        f"## Shard-aware caches: 3 replicas over {data['pods']:,} Pods, {data['shards']} shards",
        "",
        "Real control plane, each replica its own process (`benchmarks/bench_shard_caches.py`). "
        f"One unsharded replica: {whole['rss_kb'] / 1024:.0f} MB once synced "
        f"({whole['sync_seconds']:.1f} s).",
        "",
        "| three replicas | labelled and spread after | cached Pods | RSS MB | RSS / unsharded |",
        "|---|---|---|---|---|",
    ]
    for key, label in (
        ("three_labelling", "first start, labelling every Pod"),
        ("three", "restarted"),
    ):
        section = data.get(key)
        if section is None:
            continue
        replicas = section["replicas"]
        cached = ", ".join(f"{r['cached']:,}" for r in replicas)
        rss = ", ".join(f"{r['rss_kb'] / 1024:.0f}" for r in replicas)
        ratios = ", ".join(f"{x:.2f}x" for x in section["rss_ratio"])
        out.append(
            f"| {label} | {section['spread_seconds']:.0f} s | {cached} | {rss} | "
            f"{ratios} (goal {section['goal']:.2f}x) |"
        )
    moves = data.get("moves") or {}
    out += [
        "",
        "| move (under ~20 writes/s) | until every cache holds exactly its shards |",
        "|---|---|",
    ]
    for step in ("join", "leave", "freeze", "kill"):
        if step in moves:
            out.append(f"| {step} | {moves[step]['seconds']:.1f} s |")
    overlap = data.get("overlap")
    if overlap is not None:
        out += [
            "",
            f"{overlap['reconciles']:,} reconciles of {overlap['keys']:,} keys: "
            f"{overlap['overlaps']} reconciled by two replicas at once "
            f"({overlap['overlaps_with_a_frozen_reconcile']} more with a reconcile frozen by the "
            f"SIGSTOP); reconciles that missed their Pod in the cache: "
            f"{sum((data.get('misses') or {}).values())}.",
        ]
    return out + [""]
