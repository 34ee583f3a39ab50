"""One write's CPU in the client, against client-go with JSON and with protobuf, on the real control plane.

Each client runs in a fresh process of its own (:mod:`benchmarks.writer`; the
Go anchor's ``-write-bench``) against one kube-apiserver over TLS, as clusters
serve it: N Deployments created, replaced, their status written,
merge-patched and deleted, one request at a time. Reported per kind of write:
the client process's CPU microseconds per write (all threads) and the wall
microseconds, medians of interleaved rounds (order alternating), and the
ratios to client-go with JSON taken round by round.

Clients: pyinformers' ``ResourceClient`` (its writes on the lean path), the
same with its writes sent through the official client's ``call_api`` (as
before the lean path), the official typed ``AppsV1Api``, raw urllib3 + orjson
(a floor for urllib3), client-go with JSON and client-go with protobuf.

``BENCH_QUICK=1``: 100 writes of each kind, one round. Results go to
``benchmarks/report/results/writes.json``. Skipped with one line without the
control plane's binaries or Go.
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

from benchmarks.bench_e2e import control_plane_class, prerequisites

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "report" / "results"
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
N = 100 if QUICK else 200
ROUNDS = 1 if QUICK else 3
PYTHON_CLIENTS = ["pyinformers", "pyinformers-call-api", "typed", "urllib3"]
GO_CLIENTS = ["client-go-json", "client-go-protobuf"]
BASELINE = "client-go-json"
OPS = ("create", "update", "status", "patch", "delete")


def run_client(client: str, kubeconfig: str, namespace: str, binary: Path) -> dict:
    if client.startswith("client-go"):
        command = [
            str(binary),
            "-kubeconfig",
            kubeconfig,
            "-qps",
            "-1",
            "-write-bench",
            str(N),
            "-namespace",
            namespace,
        ] + (["-protobuf"] if client.endswith("protobuf") else [])
    else:
        command = [
            sys.executable,
            "-m",
            "benchmarks.writer",
            client,
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            namespace,
            "--n",
            str(N),
        ]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{client} failed: {proc.stderr[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["ops"]


def main() -> None:
    binary = prerequisites("bench_writes")
    if binary is None:
        return
    ControlPlane, _ = control_plane_class()
    from pyinformers.api import ResourceClient
    from pyinformers.resources import NAMESPACES

    clients = PYTHON_CLIENTS + GO_CLIENTS
    runs: dict[str, list[dict]] = {c: [] for c in clients}
    with tempfile.TemporaryDirectory(prefix="bench-writes-") as tmp, ControlPlane() as cp:
        kubeconfig = cp.write_kubeconfig(Path(tmp) / "kubeconfig")
        api = cp.api_client()
        namespaces = ResourceClient(api, NAMESPACES)
        for r in range(ROUNDS):
            order = clients if r % 2 == 0 else list(reversed(clients))
            for client in order:
                namespace = f"w-{client}-{r}"
                namespaces.create({"metadata": {"name": namespace}})
                ops = run_client(client, kubeconfig, namespace, binary)
                runs[client].append(ops)
                print(
                    f"  round {r + 1}/{ROUNDS} {client:<22} "
                    + "  ".join(f"{op} {ops[op]['cpu_us']:5.0f}us" for op in OPS),
                    flush=True,
                )
        api.close()
    table: dict[str, Any] = {}
    for client in clients:
        row: dict[str, Any] = {}
        for op in OPS:
            cpu = [run[op]["cpu_us"] for run in runs[client]]
            ratio = [
                run[op]["cpu_us"] / base[op]["cpu_us"]
                for run, base in zip(runs[client], runs[BASELINE])
            ]
            row[op] = {
                "cpu_us": statistics.median(cpu),
                "cpu_us_min": min(cpu),
                "cpu_us_max": max(cpu),
                "wall_us": statistics.median(run[op]["wall_us"] for run in runs[client]),
                "vs_client_go_json": {
                    "median": statistics.median(ratio),
                    "min": min(ratio),
                    "max": max(ratio),
                },
            }
        table[client] = row
    print(f"  CPU us per write in the client (median of {ROUNDS}), x client-go JSON:")
    for client, row in table.items():
        print(
            f"    {client:<22} "
            + "  ".join(
                f"{op} {row[op]['cpu_us']:5.0f} ({row[op]['vs_client_go_json']['median']:.2f}x)"
                for op in OPS
            )
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "writes.json").write_text(
        json.dumps({"n": N, "rounds": ROUNDS, "runs": runs, "table": table}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
