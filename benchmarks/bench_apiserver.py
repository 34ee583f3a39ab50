"""How fast the in-process API server streams watches and takes writes.

Our informer benchmarks must not be limited by the server, so this finds its
ceiling:

* **watch events/s** streamed from history (every change replayed from a
  resourceVersion) to 1 and to 10 concurrent watchers, read as raw chunked
  JSON lines with urllib3 and decoded with orjson, as the Reflector does;
* **writes/s** over HTTP (create + merge patch of ~3 KB Pods, one keep-alive
  connection per writer) and in process (the REST layer without HTTP).

Baselines measured in the same run: for watches, decoding the very same lines
in memory with ``orjson.loads`` (the cheapest possible consumer; a server
faster than that never limits a client); for writes, the in-process REST layer
(what HTTP costs on top).
"""

from __future__ import annotations

import statistics
import threading
import time

import orjson
import urllib3

from pyinformers.testing import ApiServer

EVENTS = 10_000
WATCHERS = 10
HTTP_WRITES = 1_000


def _pod(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i:06d}",
            "namespace": "default",
            "labels": {"app": "bench", "pod-template-hash": "5d8f7c9b6", "tier": "backend"},
            # No ownerReferences: the server's garbage collector deletes objects whose owners do not exist.
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
                "note": "x" * 400,
            },
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/team/app:1.2.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": f"VAR_{k}", "value": f"value-{k}-" + "v" * 40} for k in range(24)
                    ],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "256Mi"},
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                    },
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "nodeName": "node-1",
            "restartPolicy": "Always",
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _stream(url: str, count: int, *, decode: bool = True) -> float:
    """Read ``count`` events from a watch URL (decoding each line, or only counting); returns seconds."""
    http = urllib3.PoolManager()
    started = time.perf_counter()
    resp = http.request(
        "GET",
        url,
        preload_content=False,
        retries=False,
        timeout=urllib3.Timeout(connect=5, read=30),
    )
    seen = 0
    buffer = b""
    for chunk in resp.stream(1 << 16):
        if decode:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                orjson.loads(line)
            seen += len(lines)
        else:
            seen += chunk.count(b"\n")
        if seen >= count:
            break
    elapsed = time.perf_counter() - started
    resp.release_conn()
    resp.close()
    if seen < count:
        raise RuntimeError(f"watch ended after {seen} of {count} events")
    return elapsed


def _watch_rates(server: ApiServer, start_rv: str, *, decode: bool) -> tuple[float, float, float]:
    url = f"{server.url}/api/v1/namespaces/default/pods?watch=true&resourceVersion={start_rv}"
    one = EVENTS / _stream(url, EVENTS, decode=decode)
    times: list[float] = [0.0] * WATCHERS
    barrier = threading.Barrier(WATCHERS)

    def run(i: int) -> None:
        barrier.wait()
        times[i] = _stream(url, EVENTS, decode=decode)

    wall = _run_threads([lambda i=i: run(i) for i in range(WATCHERS)])
    total = WATCHERS * EVENTS / wall
    per_watcher = statistics.median(EVENTS / t for t in times)
    return one, total, per_watcher


def _decode_baseline(server: ApiServer, start_rv: str) -> float:
    changes = server.store.changes_since(int(start_rv), "/pods")
    lines = [c.line for c in changes]
    started = time.perf_counter()
    for line in lines:
        orjson.loads(line)
    return len(lines) / (time.perf_counter() - started)


def _http_writes(server: ApiServer, writers: int) -> float:
    per_writer = HTTP_WRITES // writers

    def run(w: int) -> None:
        http = urllib3.PoolManager(maxsize=1)
        base = f"{server.url}/api/v1/namespaces/default/pods"
        for i in range(per_writer):
            name = f"w{writers}-{w}-{i}"
            body = _pod(0)
            body["metadata"]["name"] = name
            r = http.request(
                "POST", base, body=orjson.dumps(body), headers={"Content-Type": "application/json"}
            )
            assert r.status == 201, r.data
            r = http.request(
                "PATCH",
                f"{base}/{name}",
                body=b'{"metadata":{"labels":{"x":"y"}}}',
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert r.status == 200, r.data

    elapsed = _run_threads([lambda w=w: run(w) for w in range(writers)])
    return 2 * per_writer * writers / elapsed


def _run_threads(targets: list) -> float:
    """Run each target on its own thread; returns the wall time, re-raising the first failure."""
    errors: list[BaseException] = []

    def guarded(target) -> None:
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [
        threading.Thread(target=guarded, args=(t,), name=f"bench-{i}")
        for i, t in enumerate(targets)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def _inprocess_writes(server: ApiServer, count: int) -> float:
    pods = server.registry.lookup("", "v1", "pods")
    started = time.perf_counter()
    for i in range(count):
        body = _pod(i)
        body["metadata"]["name"] = f"inproc-{i}"
        server.rest.create(pods, "default", body)
    return count / (time.perf_counter() - started)


def main() -> None:
    with ApiServer(history_limit=1_000_000, max_watch_queue=1_000_000) as server:
        pods = server.registry.lookup("", "v1", "pods")
        start_rv = server.resource_version
        size = len(orjson.dumps(_pod(0)))
        for i in range(EVENTS):
            server.rest.create(pods, "default", _pod(i))
        baseline = _decode_baseline(server, start_rv)
        one, total, per_watcher = _watch_rates(server, start_rv, decode=True)
        raw_one, raw_total, raw_per = _watch_rates(server, start_rv, decode=False)
        inproc = _inprocess_writes(server, 3_000)
        http1 = _http_writes(server, 1)
        http4 = _http_writes(server, 4)

    print(f"Pod size {size} bytes; {EVENTS} events per watcher, replayed from history")
    print(f"{'measure':<52} {'per s':>10} {'ratio':>8}")
    print(
        f"{'baseline: orjson.loads of the same lines, in memory':<52} {baseline:>10,.0f} {1.0:>8.2f}"
    )
    print(f"{'watch: 1 watcher':<52} {one:>10,.0f} {one / baseline:>8.2f}")
    print(
        f"{'watch: 10 watchers, all events together':<52} {total:>10,.0f} {total / baseline:>8.2f}"
    )
    print(
        f"{'watch: 10 watchers, median per watcher':<52} {per_watcher:>10,.0f} {per_watcher / baseline:>8.2f}"
    )
    print(
        f"{'watch, lines only counted: 1 watcher':<52} {raw_one:>10,.0f} {raw_one / baseline:>8.2f}"
    )
    print(
        f"{'watch, lines only counted: 10 watchers together':<52} {raw_total:>10,.0f} {raw_total / baseline:>8.2f}"
    )
    print(
        f"{'watch, lines only counted: median per watcher':<52} {raw_per:>10,.0f} {raw_per / baseline:>8.2f}"
    )
    print(f"{'baseline: writes in process (REST layer, no HTTP)':<52} {inproc:>10,.0f} {1.0:>8.2f}")
    print(
        f"{'writes over HTTP, 1 writer (create + patch)':<52} {http1:>10,.0f} {http1 / inproc:>8.2f}"
    )
    print(f"{'writes over HTTP, 4 writers':<52} {http4:>10,.0f} {http4 / inproc:>8.2f}")


if __name__ == "__main__":
    main()
