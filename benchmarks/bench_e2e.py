"""A controller's whole loop, end to end on the real control plane: pyinformers against client-go.

The scenario is kubernetes/sample-controller's: every Foo
(``samplecontroller.k8s.io/v1alpha1``) gets an nginx Deployment at the Foo's
replicas, and the Foo's status copies the Deployment's available replicas.
Two controllers run it, each as its own process:

* **Go**: ``benchmarks/gocontroller``, client-go the way sample-controller is
  (shared informers for Foos and Deployments, a rate-limiting work queue, two
  workers, Create/Update of the Deployment, UpdateStatus of the Foo, an
  EventRecorder), with client-go's client-side throttle off, and the same with
  protobuf for the built-in kinds (as kube-controller-manager talks);
* **pyinformers**: ``python -m samples.sample_controller`` (an Operator:
  a Manager, two workers), as a user runs it.

Each run gets a fresh control plane (etcd + kube-apiserver from ``make
envtest``, without kube-controller-manager: see below), installs the CRD,
starts the controller and warms it up with one Foo; then two phases, each
timed from the first write to convergence (wall) and, for CPU, until the
controller has gone quiet again (its Events written):

1. **create**: 8 writer threads create N Foos (replicas 1); converged when
   every Foo has its Deployment and a status (two writes per Foo: the
   Deployment's create and the Foo's status update, plus an Event);
2. **scale**: 8 writer threads patch every Foo to replicas 2; converged when
   every Deployment says 2 (one write per Foo: the Deployment's update).

Measured per phase: wall seconds, the controller's CPU seconds (all threads,
from ``/proc/PID/stat``), its RSS at the end, and the API server's and
etcd's CPU, and the requests the API server answered (its
``apiserver_request_total`` by verb, resource and code, the writers' included).
Rounds interleave the controllers (the order alternates) and the
ratios pyinformers / Go are taken round by round; the report gives their
median and range.

Why no kube-controller-manager: its Deployment and ReplicaSet controllers
would make a ReplicaSet and Pods for every Deployment under their own
client-side throttle (20 QPS), minutes behind the controller under test,
and without a kubelet the Pods never run, so ``availableReplicas`` stays 0
either way. Without it the Deployments' status stays empty, the Foo copies
``availableReplicas: 0`` once (the create phase's status write), and both
phases converge on the controller's own writes. ``BENCH_E2E_KCM=1`` runs
with it anyway (the convergence is the same; the API server is busier).

Then the **client-side throttle**: at a small N, Go with client-go's default
(5 QPS, burst 10) and with controller-runtime's (20, burst 30), against
pyinformers with the same, one round each.

``BENCH_QUICK=1``: 200 Foos, one round. ``BENCH_E2E_LARGE=1`` adds 10,000
Foos (``BENCH_E2E_LARGE_ROUNDS`` rounds, default one; a round of both
controllers takes about seven minutes on two cores, so it is off by default).
``BENCH_E2E_ONLY=large`` (or ``main``, ``throttle``, comma-separated) runs just
those sections and keeps the others' last results. Results go to
``benchmarks/report/results/e2e.json``. Skipped with one line when the
control plane's binaries (``make envtest``) or Go are missing.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import gobuild

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "report" / "results"

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
FOOS_N = 200 if QUICK else 1_000
LARGE_N = 10_000
LARGE = not QUICK and os.environ.get("BENCH_E2E_LARGE", "") not in ("", "0")
ROUNDS = 1 if QUICK else 3
LARGE_ROUNDS = 1 if QUICK else int(os.environ.get("BENCH_E2E_LARGE_ROUNDS", "1"))
THROTTLE_N = 50 if QUICK else 100
ONLY = {s for s in os.environ.get("BENCH_E2E_ONLY", "").split(",") if s}
WRITERS = 8
NAMESPACE = "e2e"
WITH_KCM = os.environ.get("BENCH_E2E_KCM", "") not in ("", "0")
TICK = os.sysconf("SC_CLK_TCK")

FOO_GROUP, FOO_VERSION = "samplecontroller.k8s.io", "v1alpha1"


# --------------------------------------------------------------------------- the API server's count
def apiserver_requests(api_client: Any) -> Counter:
    """The kube-apiserver's ``apiserver_request_total`` so far, summed by "VERB resource code"."""
    from pyinformers.api._transport import send

    response = send(api_client, "GET", "/metrics", headers={"Accept": "text/plain"})
    try:
        text = response.read().decode()
    finally:
        response.release_conn()
    counts: Counter = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line[len("apiserver_request_total{") :].rpartition("} ")
        labels = dict(
            part.split("=", 1) for part in labels_text.replace('"', "").split(",") if "=" in part
        )
        if labels.get("resource") in ("leases", "namespaces", "customresourcedefinitions"):
            continue  # not the scenario's (the control plane's own, and the set-up)
        key = f"{labels.get('verb')} {labels.get('resource')} {labels.get('code')}"
        counts[key] += int(float(value))
    return counts


# --------------------------------------------------------------------------- /proc
def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2 :].split()  # fields[0] is the state (field 3)
    return (int(fields[11]) + int(fields[12])) / TICK


def proc_rss_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of ``pid`` in KB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0])
    return {"rss_kb": out.get("VmRSS", 0), "peak_rss_kb": out.get("VmHWM", 0)}


def settle(pid: int, *, idle: float = 0.02, window: float = 0.5, limit: float = 30.0) -> float:
    """Wait until ``pid`` used less than ``idle`` CPU seconds in ``window`` (at most ``limit`` s); its CPU then."""
    deadline = time.monotonic() + limit
    last = proc_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(window)
        now = proc_cpu(pid)
        if now - last < idle:
            return now
        last = now
    return last


# --------------------------------------------------------------------------- the scenario's watcher
class Tracker:
    """Watches Foos and Deployments of the namespace (informers in the benchmark's process) and counts.

    ``with_status``: Foos whose status has ``availableReplicas``; ``replicas``:
    Deployments by ``spec.replicas``. Thread-safe; :meth:`wait` blocks on a
    condition over the counts.
    """

    def __init__(self, api_client: Any, foos: Any, deployments: Any) -> None:
        from pyinformers.cache import ResourceEventHandlerFuncs, SharedInformerFactory

        self._cond = threading.Condition()
        self._status: dict[str, bool] = {}
        self._deployments: dict[str, Any] = {}
        self.with_status = 0
        self.replicas: Counter = Counter()
        self.factory = SharedInformerFactory(
            api_client, namespace=NAMESPACE, metrics_registry=False
        )
        self.factory.informer(foos).add_event_handler(
            ResourceEventHandlerFuncs(
                on_add=lambda obj, _initial: self._foo(obj),
                on_update=lambda _old, new: self._foo(new),
            )
        )
        self.factory.informer(deployments).add_event_handler(
            ResourceEventHandlerFuncs(
                on_add=lambda obj, _initial: self._deployment(obj),
                on_update=lambda _old, new: self._deployment(new),
            )
        )
        self.factory.start()
        self.factory.wait_for_cache_sync(timeout=60)

    def _foo(self, obj: dict) -> None:
        name = obj["metadata"]["name"]
        has = (obj.get("status") or {}).get("availableReplicas") is not None
        with self._cond:
            before = self._status.get(name, False)
            self._status[name] = has
            self.with_status += int(has) - int(before)
            self._cond.notify_all()

    def _deployment(self, obj: dict) -> None:
        name = obj["metadata"]["name"]
        value = (obj.get("spec") or {}).get("replicas")
        with self._cond:
            if name in self._deployments:
                self.replicas[self._deployments[name]] -= 1
            self._deployments[name] = value
            self.replicas[value] += 1
            self._cond.notify_all()

    @property
    def deployments(self) -> int:
        return len(self._deployments)

    def wait(self, condition: Callable[[Tracker], bool], timeout: float, what: str) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: condition(self), timeout=timeout):
                raise TimeoutError(
                    f"not converged in {timeout:.0f}s: {what} (foos with status {self.with_status}, "
                    f"deployments {self.deployments}, by replicas {dict(self.replicas)})"
                )

    def stop(self) -> None:
        self.factory.stop()


def foo(name: str, replicas: int) -> dict:
    return {
        "apiVersion": f"{FOO_GROUP}/{FOO_VERSION}",
        "kind": "Foo",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"deploymentName": name, "replicas": replicas},
    }


def parallel(fn: Callable[[Any], Any], items: list) -> None:
    with ThreadPoolExecutor(WRITERS) as pool:
        for _ in pool.map(fn, items):
            pass


# --------------------------------------------------------------------------- one run
def controller_command(variant: str, binary: Path | None, kubeconfig: str) -> list[str]:
    """The command line of a variant: ``go[-protobuf][-qps=Q,B]`` or ``pyinformers[-qps=Q,B]``."""
    name, _, throttle = variant.partition("@")
    if name.startswith("go"):
        assert binary is not None
        command = [str(binary), "-kubeconfig", kubeconfig]
        if name == "go-protobuf":
            command.append("-protobuf")
        if throttle == "default":
            pass  # client-go's own default (-qps 0)
        elif throttle:
            qps, burst = throttle.split(",")
            command += ["-qps", qps, "-burst", burst]
        else:
            command += ["-qps", "-1"]
        return command
    command = [
        sys.executable,
        "-m",
        "samples.sample_controller",
        "--kubeconfig",
        kubeconfig,
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--webhook-bind-address",
        "0",  # the sample's webhooks are not part of the scenario (the Go anchor has none)
    ]
    if throttle:
        qps, burst = throttle.split(",")
        command += ["--kube-api-qps", qps, "--kube-api-burst", burst]
    return command


def run_once(variant: str, n: int, binary: Path | None) -> dict:
    """One controller on a fresh control plane: warm-up, create n Foos, scale them; the measurements."""
    ControlPlane, _ = control_plane_class()
    from pyinformers.api import ResourceClient
    from pyinformers.resources import DEPLOYMENTS, NAMESPACES
    from samples._support import install_crd
    from samples.sample_controller import ARTIFACTS, FOOS

    timeout = max(180.0, n * 0.12)
    with (
        tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp,
        ControlPlane(controller_manager=WITH_KCM) as cp,
    ):
        api = cp.api_client()
        install_crd(api, ARTIFACTS / "crd.yaml")
        ResourceClient(api, NAMESPACES).create({"metadata": {"name": NAMESPACE}})
        kubeconfig = cp.write_kubeconfig(Path(tmp) / "kubeconfig")
        foos = ResourceClient(api, FOOS)
        tracker = Tracker(api, FOOS, DEPLOYMENTS)
        apiserver = cp.components["kube-apiserver"].pid
        etcd = cp.components["etcd"].pid
        log_path = Path(tmp) / "controller.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                controller_command(variant, binary, kubeconfig),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        try:
            started = time.perf_counter()
            foos.create(foo("warmup", 1))
            tracker.wait(
                lambda t: t.with_status >= 1 and t.deployments >= 1, 180, "the warm-up Foo"
            )
            settle(proc.pid)
            result: dict[str, Any] = {
                "variant": variant,
                "foos": n,
                "ready_seconds": time.perf_counter() - started,
                "start": proc_rss_kb(proc.pid),
            }

            def phase(
                write: Callable[[int], Any], converged: Callable[[Tracker], bool], what: str
            ) -> dict:
                requests0 = apiserver_requests(api)
                cpu0, api0, etcd0 = proc_cpu(proc.pid), proc_cpu(apiserver), proc_cpu(etcd)
                t0 = time.perf_counter()
                parallel(write, list(range(n)))
                writes = time.perf_counter() - t0
                tracker.wait(converged, timeout, what)
                wall = time.perf_counter() - t0
                cpu = settle(proc.pid) - cpu0
                if proc.poll() is not None:
                    raise RuntimeError(f"{variant} exited with {proc.returncode}")
                return {
                    "wall": wall,
                    "writes_seconds": writes,
                    "cpu": cpu,
                    "apiserver_cpu": proc_cpu(apiserver) - api0,
                    "etcd_cpu": proc_cpu(etcd) - etcd0,
                    **proc_rss_kb(proc.pid),
                    # every request the API server answered meanwhile (the writers' and the
                    # tracker's too), by verb, resource and code
                    "requests": dict(sorted((apiserver_requests(api) - requests0).items())),
                }

            spy = profiler(variant, n, proc.pid)
            result["create"] = phase(
                lambda i: foos.create(foo(f"foo-{i:05d}", 1)),
                lambda t: t.with_status >= n + 1 and t.deployments >= n + 1,
                "create",
            )
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
            result["scale"] = phase(
                lambda i: foos.patch(
                    f"foo-{i:05d}", {"spec": {"replicas": 2}}, namespace=NAMESPACE
                ),
                lambda t: t.replicas[2] >= n,
                "scale",
            )
            return result
        except BaseException:
            sys.stderr.write(
                f"  {variant}: controller log tail:\n"
                + "".join(log_path.read_text(errors="replace").splitlines(True)[-20:])
            )
            raise
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            tracker.stop()
            api.close()


def profiler(variant: str, n: int, pid: int) -> subprocess.Popen | None:
    """With ``BENCH_E2E_PROFILE=DIR``: py-spy sampling a Python controller's create phase (its figures are then
    not comparable: the sampler costs the process CPU); the collapsed stacks go to DIR/VARIANT-N.txt."""
    folder = os.environ.get("BENCH_E2E_PROFILE")
    if not folder or not variant.startswith("pyinformers"):
        return None
    spy = Path(sys.executable).with_name("py-spy")
    out = Path(folder) / f"{variant}-{n}.txt"
    proc = subprocess.Popen(
        [
            str(spy),
            "record",
            "--pid",
            str(pid),
            "--rate",
            "200",
            "--gil",
            "--format",
            "raw",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # attached
    return proc


def control_plane_class() -> tuple[Any, Any]:
    try:
        from pyinformers.testing.envtest import (
            ControlPlane,
            MissingBinaries,
        )  # after the layout of issue 21
    except ImportError:
        from pyinformers.testing import ControlPlane, MissingBinaries
    return ControlPlane, MissingBinaries


def binaries_missing() -> str | None:
    ControlPlane, MissingBinaries = control_plane_class()
    try:
        with ControlPlane():
            return None
    except MissingBinaries as err:
        return str(err).splitlines()[0]


# --------------------------------------------------------------------------- rounds and ratios
def spread(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def rounds(variants: list[str], n: int, count: int, binary: Path | None) -> dict:
    """``count`` interleaved rounds of every variant at ``n`` Foos (order alternating); runs and ratios."""
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    load_at_start = os.getloadavg()[0]
    for r in range(count):
        order = variants if r % 2 == 0 else list(reversed(variants))
        for variant in order:
            result = run_once(variant, n, binary)
            runs[variant].append(result)
            print(
                f"  round {r + 1}/{count} {variant:<22} n={n}: "
                + "  ".join(
                    f"{p} wall {result[p]['wall']:6.2f}s cpu {result[p]['cpu']:6.2f}s "
                    f"api {result[p]['apiserver_cpu']:6.2f}s"
                    for p in ("create", "scale")
                )
                + f"  rss {result['scale']['rss_kb'] / 1024:.0f} MB",
                flush=True,
            )
    return {
        "foos": n,
        "rounds": count,
        "runs": runs,
        "ratios": ratios(runs),
        "load": [load_at_start, os.getloadavg()[0]],  # the 1-minute load average, start and end
    }


def ratios(runs: dict[str, list[dict]]) -> dict:
    """pyinformers / each Go variant, per phase and measure, taken round by round."""
    out: dict[str, Any] = {}
    ours = [v for v in runs if v.startswith("pyinformers")]
    anchors = [v for v in runs if v.startswith("go")]
    for mine in ours:
        for anchor in anchors:
            pairs = list(zip(runs[mine], runs[anchor]))
            entry: dict[str, Any] = {}
            for p in ("create", "scale"):
                for measure in ("wall", "cpu", "apiserver_cpu", "rss_kb"):
                    entry[f"{p}_{measure}"] = spread(
                        [a[p][measure] / b[p][measure] for a, b in pairs if b[p][measure]]
                    )
            entry["peak_rss_kb"] = spread(
                [a["scale"]["peak_rss_kb"] / b["scale"]["peak_rss_kb"] for a, b in pairs]
            )
            out[f"{mine} / {anchor}"] = entry
    return out


def print_ratios(section: dict) -> None:
    for name, entry in section["ratios"].items():
        print(
            f"  {name} at {section['foos']} Foos (median [min-max] of {section['rounds']} rounds):"
        )
        for key, value in entry.items():
            print(f"    {key:<22} {value['median']:.2f}x [{value['min']:.2f}-{value['max']:.2f}]")


def prerequisites(name: str) -> Path | None:
    """The Go anchor's binary when the control plane's binaries and Go are there; else None, said in one line."""
    missing = binaries_missing()
    if missing:
        print(f"{name} skipped: no control plane binaries ({missing}; run make envtest)")
        return None
    binary = gobuild.build("gocontroller", "gocontroller-e2e", what="the Go controller anchor")
    if binary is None:
        print(f"{name} skipped: no Go anchor")
    return binary


def wanted(section: str) -> bool:
    """Whether this run measures ``section``: all by default, else those ``BENCH_E2E_ONLY`` names."""
    if ONLY:
        return section in ONLY
    return section != "large" or LARGE


def main() -> None:
    binary = prerequisites("bench_e2e")
    if binary is None:
        return
    unknown = ONLY - {"main", "large", "throttle"}
    if unknown:
        raise SystemExit(
            f"BENCH_E2E_ONLY: unknown sections {sorted(unknown)} (main, large, throttle)"
        )
    kept = RESULTS / "e2e.json"
    data: dict[str, Any] = json.loads(kept.read_text()) if ONLY and kept.exists() else {}
    data.update(
        {
            "quick": QUICK,
            "kube_controller_manager": WITH_KCM,
            "writers": WRITERS,
            "cpus": os.cpu_count(),
        }
    )
    if not ONLY:  # the whole run's load; a partial run's is in its sections ("load")
        data["load_at_start"] = os.getloadavg()
    if wanted("main"):
        data["main"] = rounds(["go", "pyinformers", "go-protobuf"], FOOS_N, ROUNDS, binary)
        print_ratios(data["main"])
        _save(data)
    if wanted("large"):
        data["large"] = rounds(["go", "pyinformers"], LARGE_N, LARGE_ROUNDS, binary)
        print_ratios(data["large"])
        _save(data)
    if wanted("throttle"):
        throttle = ["go@default", "go@20,30", "pyinformers@20,30"]
        data["throttle"] = rounds(throttle, THROTTLE_N, 1, binary)
    if not ONLY:
        data["load_at_end"] = os.getloadavg()
    _save(data)


def _save(data: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "e2e.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
