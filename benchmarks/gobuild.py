"""Build a Go anchor of the benchmarks (a folder of ``benchmarks/`` with main.go, go.mod, go.sum) with the machine's Go.

The binary goes to ``benchmarks/.cache/NAME`` and is rebuilt only when one of
the sources is newer; the first build downloads modules through the Go module
proxy. :func:`build` returns None (after printing one line saying why) when
there is no Go toolchain or the build fails, so a benchmark can skip the anchor.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"

__all__ = ["CACHE", "build"]


def build(folder: str, binary_name: str, *, what: str) -> Path | None:
    """Build ``benchmarks/folder`` into ``benchmarks/.cache/binary_name``; cached. None without Go."""
    go = shutil.which("go")
    if go is None:
        print(f"  {what} skipped: no Go toolchain on PATH", flush=True)
        return None
    binary = CACHE / binary_name
    sources = [HERE / folder / name for name in ("main.go", "go.mod", "go.sum")]
    if binary.exists() and all(binary.stat().st_mtime >= s.stat().st_mtime for s in sources):
        return binary
    CACHE.mkdir(exist_ok=True)
    print(f"  building {what} (go build; the first build downloads modules)...", flush=True)
    started = time.perf_counter()
    proc = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=HERE / folder,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        print(f"  {what} skipped: go build failed:\n{proc.stderr[-2000:]}", flush=True)
        return None
    print(f"  built in {time.perf_counter() - started:.0f}s", flush=True)
    return binary
