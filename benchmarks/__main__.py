"""Run every benchmark module (``bench_*.py``) in this folder, in name order, then write the report.

``python -m benchmarks [bench_name ...]`` runs only the named ones; the report
(:mod:`benchmarks.report`) is rendered from the latest results of all of them.
``BENCH_QUICK=1`` shortens the long ones.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    wanted = set(argv)
    names = sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    unknown = wanted - set(names)
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(sorted(unknown))}; known: {', '.join(names)}",
            file=sys.stderr,
        )
        return 2
    for name in names:
        if wanted and name not in wanted:
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        module.main()
        print(f"=== {name}: {time.perf_counter() - started:.0f}s ===", flush=True)
    from benchmarks import report

    print(f"\nreport: {report.write()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
