"""What an operator process costs before it does anything: RSS and import time, dependency by dependency.

Each step runs in a fresh interpreter that imports the previous steps' modules
and then its own, and reports its RSS (``VmRSS``) and the wall time of its
own imports; the difference to the step before is what that dependency
costs. The steps are what ``python -m samples.sample_controller`` imports, in
the order it needs them. Also counted: whether the official client's generated
models (``kubernetes.client.models.*``) and API classes are imported at all by
an operator that writes through pyinformers (they are not: the client's
package loads them on first attribute use, and pyinformers uses none).

Results go to ``benchmarks/report/results/startup.json``; medians of 5 fresh
processes per step (1 with ``BENCH_QUICK=1``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "report" / "results"
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
REPEATS = 1 if QUICK else 5

#: (label, modules imported by this step)
STEPS: list[tuple[str, list[str]]] = [
    ("CPython", []),
    ("orjson", ["orjson"]),
    ("ssl (OpenSSL)", ["ssl"]),
    ("urllib3", ["urllib3"]),
    ("yaml", ["yaml"]),
    ("prometheus_client", ["prometheus_client"]),
    (
        "pyinformers (api, cache, controller, manager, record)",
        [
            "pyinformers.api",
            "pyinformers.cache",
            "pyinformers.controller",
            "pyinformers.manager",
            "pyinformers.record",
        ],
    ),
    ("the official client's configuration (kubernetes.config)", ["kubernetes.config"]),
    ("samples.sample_controller", ["samples.sample_controller.__main__"]),
]

_PROBE = """
import sys, time, json
before = [{before}]
for name in before:
    __import__(name)
started = time.perf_counter()
for name in [{mine}]:
    __import__(name)
seconds = time.perf_counter() - started
rss = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS'))
print(json.dumps({{"rss_kb": rss, "seconds": seconds, "modules": len(sys.modules),
    "models": sum(1 for m in sys.modules if m.startswith('kubernetes.client.models.')),
    "apis": sum(1 for m in sys.modules if m.startswith('kubernetes.client.api.'))}}))
"""


def probe(before: list[str], mine: list[str]) -> dict:
    code = _PROBE.format(before=", ".join(map(repr, before)), mine=", ".join(map(repr, mine)))
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    rows = []
    before: list[str] = []
    previous_rss = 0.0
    for label, mine in STEPS:
        runs = [probe(before, mine) for _ in range(REPEATS)]
        rss = statistics.median(r["rss_kb"] for r in runs) / 1024
        row = {
            "step": label,
            "rss_mb": rss,
            "adds_mb": rss - previous_rss,
            "import_seconds": statistics.median(r["seconds"] for r in runs),
            "modules": runs[-1]["modules"],
            "kubernetes_models": runs[-1]["models"],
            "kubernetes_apis": runs[-1]["apis"],
        }
        rows.append(row)
        print(
            f"  {label:<58} RSS {rss:5.1f} MB (+{row['adds_mb']:4.1f})  imports {row['import_seconds'] * 1000:6.0f} ms"
            f"  modules {row['modules']}  models {row['kubernetes_models']}",
            flush=True,
        )
        before += mine
        previous_rss = rss
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "startup.json").write_text(
        json.dumps({"repeats": REPEATS, "rows": rows}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
