"""What webhooks cost: reviews/s of the webhook server, latency added to a create, conversion per object.

* **reviews/s**: AdmissionReviews (the sample controller's defaulting
  webhook, a 1 KB Foo) POSTed over HTTPS keep-alive to a
  :class:`~pyinformers.manager.WebhookServer`, by 1 and 4 client threads;
  baseline: the same reviews answered in process (``Webhooks.handle``), so
  the ratio is what HTTPS, HTTP parsing and the thread hand-offs add.
* **latency added to a create** (p50/p99): ConfigMap creates through the API
  server, alternating one that a mutating and a validating webhook select
  (by label) with one they do not, on the embedded server and on a real
  control plane (kube-apiserver 1.36, when ``make envtest`` built it).
* **conversion per object**: a list of 1,000 custom resources stored at v2,
  read through v2 (no conversion) and through v1 (one ConversionReview of
  1,000 objects), interleaved; the difference divided by 1,000.

Medians of interleaved rounds; CPU time of this process (client, webhook
server, and the embedded server when it is the one) beside wall time.
"""

from __future__ import annotations

import http.client
import os
import ssl
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pyinformers.api import Resource, ResourceClient
from pyinformers.manager import ANY_PORT, TLSFiles, WebhookServer
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import ApiServer, install_webhooks
from pyinformers.webhook import AdmissionRequest, Webhooks

QUICK = bool(os.environ.get("BENCH_QUICK"))
REVIEWS = 1_000 if QUICK else 4_000
CREATES = 100 if QUICK else 400
OBJECTS = 1_000
ROUNDS = 3
RESULTS = Path(__file__).parent / "report" / "results"

FOOS = Resource("samplecontroller.k8s.io", "v1alpha1", "foos", "Foo")
GROUP = "bench.pyinformers.io"


def _review(i: int) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": f"uid-{i}",
                "operation": "CREATE",
                "namespace": "default",
                "name": f"foo-{i}",
                "kind": {"group": FOOS.group, "version": FOOS.version, "kind": "Foo"},
                "resource": {"group": FOOS.group, "version": FOOS.version, "resource": "foos"},
                "userInfo": {
                    "username": "admin",
                    "groups": ["system:masters", "system:authenticated"],
                },
                "object": {
                    "apiVersion": FOOS.api_version,
                    "kind": "Foo",
                    "metadata": {
                        "name": f"foo-{i}",
                        "namespace": "default",
                        "labels": {"app": "bench"},
                        "annotations": {"note": "x" * 600},
                    },
                    "spec": {"deploymentName": f"web-{i}"},
                },
            },
        }
    )


def _certs(directory: Path) -> Any:
    from pyinformers.testing.envtest import make_serving_certs

    return make_serving_certs(directory)


def _reviews_per_second(tmp: Path) -> dict:
    from samples.sample_controller.webhooks import WEBHOOKS

    certs = _certs(tmp / "server")
    server = WebhookServer(
        WEBHOOKS, "127.0.0.1", ANY_PORT, tls=TLSFiles(str(certs.cert), str(certs.key))
    )
    server.start()
    path = "/mutate/default.foos.samplecontroller.k8s.io"
    bodies = [_review(i) for i in range(REVIEWS)]
    context = ssl.create_default_context(cafile=str(certs.ca_cert))
    host, port = server.address  # type: ignore[misc]

    def post(chunk: list[bytes]) -> None:
        conn = http.client.HTTPSConnection(host, port, context=context, timeout=30)
        for body in chunk:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            assert response.status == 200
            response.read()
        conn.close()

    def over_https(threads: int) -> tuple[float, float]:
        chunks = [bodies[i::threads] for i in range(threads)]
        workers = [threading.Thread(target=post, args=(c,)) for c in chunks]
        wall, cpu = time.perf_counter(), time.process_time()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return REVIEWS / (time.perf_counter() - wall), (time.process_time() - cpu) / REVIEWS * 1e6

    def in_process() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for body in bodies:
            WEBHOOKS.handle(path, body)
        return REVIEWS / (time.perf_counter() - wall), (time.process_time() - cpu) / REVIEWS * 1e6

    rows: dict[str, list[tuple[float, float]]] = {
        "in process (Webhooks.handle)": [],
        "HTTPS, 1 client": [],
        "HTTPS, 4 clients": [],
    }
    try:
        for _ in range(ROUNDS):
            rows["in process (Webhooks.handle)"].append(in_process())
            rows["HTTPS, 1 client"].append(over_https(1))
            rows["HTTPS, 4 clients"].append(over_https(4))
    finally:
        server.stop()
    out = {}
    base = statistics.median(r for r, _ in rows["in process (Webhooks.handle)"])
    print(
        f"{'reviews (defaulting a 1 KB Foo)':<36} {'reviews/s':>10} {'us CPU/review':>14} {'x in process':>13}"
    )
    for name, values in rows.items():
        rate = statistics.median(r for r, _ in values)
        cpu = statistics.median(c for _, c in values)
        out[name] = {"reviews_per_s": rate, "cpu_us_per_review": cpu, "ratio": rate / base}
        print(f"{name:<36} {rate:>10,.0f} {cpu:>14,.0f} {rate / base:>13.2f}")
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _create_latency(api_client: Any, tmp: Path, namespace: str) -> dict:
    hooks = Webhooks("bench-latency")
    selected = {"matchLabels": {"bench-webhooks": "on"}}

    def default(request: AdmissionRequest) -> None:
        if request.object is not None:
            request.object.setdefault("data", {}).setdefault("defaulted", "yes")

    hooks.mutating(CONFIGMAPS, object_selector=selected)(default)
    hooks.validating(CONFIGMAPS, object_selector=selected)(lambda request: None)
    client = ResourceClient(api_client, CONFIGMAPS)
    timings: dict[str, list[float]] = {"on": [], "off": []}
    with install_webhooks(api_client, hooks, tmp, namespace=namespace):
        for i in range(CREATES * 2):
            which = "on" if i % 2 else "off"
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "labels": {"bench-webhooks": which}},
                "data": {"a": "b"},
            }
            started = time.perf_counter()
            created = client.create(body, namespace)
            timings[which].append((time.perf_counter() - started) * 1e3)
            assert ("defaulted" in created["data"]) == (which == "on")
    warm = {k: v[10:] for k, v in timings.items()}  # the first calls open connections
    out = {
        which: {"p50_ms": _percentile(v, 0.5), "p99_ms": _percentile(v, 0.99)}
        for which, v in warm.items()
    }
    out["added"] = {
        "p50_ms": out["on"]["p50_ms"] - out["off"]["p50_ms"],
        "p99_ms": out["on"]["p99_ms"] - out["off"]["p99_ms"],
    }
    return out


def _conversion_cost(api_client: Any, tmp: Path, namespace: str) -> dict:
    from pyinformers.controller import install_crd

    suffix = os.urandom(3).hex()
    kind, plural = f"Shape{suffix}", f"shape{suffix}"
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": plural,
                "kind": kind,
                "listKind": f"{kind}List",
            },
            "versions": [
                {"name": "v1", "served": True, "storage": False, "schema": schema},
                {"name": "v2", "served": True, "storage": True, "schema": schema},
            ],
        },
    }
    install_crd(api_client, crd)
    hooks = Webhooks("bench-conversion")
    conversion = hooks.conversion(GROUP, kind, hub="v2", plural=plural)
    conversion.spoke(
        "v1",
        to_hub=lambda o: {**o, "spec": {"size": o["spec"]["replicas"]}},
        from_hub=lambda o: {**o, "spec": {"replicas": o["spec"]["size"]}},
    )
    v1 = ResourceClient(api_client, Resource(GROUP, "v1", plural, kind))
    v2 = ResourceClient(api_client, Resource(GROUP, "v2", plural, kind))
    with install_webhooks(api_client, hooks, tmp, namespace=namespace) as installed:
        for i in range(OBJECTS):
            v2.create(
                {
                    "apiVersion": f"{GROUP}/v2",
                    "kind": kind,
                    "metadata": {"name": f"s-{i:04d}"},
                    "spec": {"size": i, "note": "x" * 200},
                },
                namespace,
            )

        def listed(client: ResourceClient, field: str) -> float:
            started = time.perf_counter()
            items = client.list(namespace).items
            elapsed = time.perf_counter() - started
            assert len(items) == OBJECTS and field in items[-1]["spec"]
            return elapsed

        # A new conversion strategy takes a moment to be used by a real server.
        deadline = time.monotonic() + 30
        while installed.server.reviews.get("/convert", 0) == 0 and time.monotonic() < deadline:
            v1.list(namespace, limit=1)
        plain, converted = [], []
        for _ in range(ROUNDS * 2):
            plain.append(listed(v2, "size"))
            converted.append(listed(v1, "replicas"))
    per_object = (statistics.median(converted) - statistics.median(plain)) / OBJECTS * 1e6
    return {
        "list_v2_ms": statistics.median(plain) * 1e3,
        "list_v1_converted_ms": statistics.median(converted) * 1e3,
        "conversion_us_per_object": per_object,
    }


def _on_server(name: str, api_client: Any, tmp: Path) -> dict:
    from pyinformers.resources import NAMESPACES

    namespace = f"bench-webhooks-{os.urandom(3).hex()}"
    ResourceClient(api_client, NAMESPACES).create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    latency = _create_latency(api_client, tmp / f"{name}-latency", namespace)
    conversion = _conversion_cost(api_client, tmp / f"{name}-conversion", namespace)
    print(
        f"{name}: create p50 {latency['off']['p50_ms']:.2f} ms -> {latency['on']['p50_ms']:.2f} ms with webhooks "
        f"(+{latency['added']['p50_ms']:.2f}), p99 {latency['off']['p99_ms']:.2f} -> {latency['on']['p99_ms']:.2f} ms "
        f"(+{latency['added']['p99_ms']:.2f}); list of {OBJECTS}: {conversion['list_v2_ms']:.0f} ms stored version, "
        f"{conversion['list_v1_converted_ms']:.0f} ms converted = {conversion['conversion_us_per_object']:.0f} us/object"
    )
    return {"create_latency": latency, "conversion": conversion}


def _real(tmp: Path, body: Callable[[Any], dict]) -> Any:
    from pyinformers.testing.envtest import ControlPlane

    try:
        cp = ControlPlane().start()
    except Exception as err:  # no binaries: say so, measure the rest
        print(f"real control plane: skipped ({err})")
        return None
    try:
        with cp.api_client() as client:
            return body(client)
    finally:
        cp.stop()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-webhooks-") as directory:
        tmp = Path(directory)
        results: dict[str, Any] = {"reviews": _reviews_per_second(tmp)}
        server = ApiServer().start()
        try:
            with server.api_client() as client:
                results["embedded"] = _on_server("embedded", client, tmp)
        finally:
            server.stop()
        results["real"] = _real(tmp, lambda client: _on_server("real", client, tmp))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_webhooks.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
