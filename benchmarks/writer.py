"""One client's writes, one at a time, timed in its own process: ``python -m benchmarks.writer``.

``python -m benchmarks.writer CLIENT --kubeconfig F --namespace NS --n N``
creates N Deployments, replaces each (a PUT with its resourceVersion), writes
each one's status subresource, merge-patches each and deletes each, one
request at a time on one thread, after a warm-up of a few of every kind. It
prints one JSON line: per operation, the client process's CPU microseconds
per write (``time.process_time``: every thread) and the wall microseconds.
``--profile FILE`` writes a cProfile of the timed part (pstats format).

CLIENT: ``pyinformers`` (:class:`~pyinformers.api.ResourceClient`), ``typed``
(the official client's ``AppsV1Api`` with dict bodies, as a user of it
writes), ``urllib3`` (raw urllib3 + orjson on the official client's
connection pool and headers: a floor for Python). The Go anchor
(``benchmarks/gocontroller -write-bench``) runs the same sequence.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

OPS = ("create", "update", "status", "patch", "delete")
WARMUP = 20


#: The Foo the written Deployments name as their controller (it need not exist: no garbage collector runs).
OWNER_UID = "4f0c8d6e-0000-4000-8000-00000000e2e0"


def deployment(namespace: str, name: str, replicas: int = 1) -> dict:
    """What the end-to-end scenario writes: samples.sample_controller's Deployment for a Foo ``name``."""
    from samples.sample_controller import new_deployment

    foo = {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name, "namespace": namespace, "uid": OWNER_UID},
        "spec": {"deploymentName": name, "replicas": replicas},
    }
    return new_deployment(foo)


def pyinformers_ops(api: Any, namespace: str) -> dict[str, Callable[[str, dict], dict]]:
    from pyinformers.api import ResourceClient
    from pyinformers.resources import DEPLOYMENTS

    client = ResourceClient(api, DEPLOYMENTS)

    def status(name: str, obj: dict) -> dict:
        obj = dict(obj, status={"observedGeneration": 1, "replicas": 0})
        return client.replace_status(obj)

    return {
        "create": lambda name, obj: client.create(deployment(namespace, name)),
        "update": lambda name, obj: client.replace(
            dict(deployment(namespace, name, 2), metadata=dict(obj["metadata"]))
        ),
        "status": status,
        "patch": lambda name, obj: client.patch(
            name, {"spec": {"replicas": 3}}, namespace=namespace
        ),
        "delete": lambda name, obj: client.delete(name, namespace=namespace),
    }


def typed_ops(api: Any, namespace: str) -> dict[str, Callable[[str, dict], Any]]:
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(api)

    def update(name: str, obj: Any) -> Any:
        body = deployment(namespace, name, 2)
        body["metadata"]["resourceVersion"] = obj.metadata.resource_version
        return apps.replace_namespaced_deployment(name, namespace, body)

    def status(name: str, obj: Any) -> Any:
        body = deployment(namespace, name, 2)
        body["metadata"]["resourceVersion"] = obj.metadata.resource_version
        body["status"] = {"observedGeneration": 1, "replicas": 0}
        return apps.replace_namespaced_deployment_status(name, namespace, body)

    return {
        "create": lambda name, obj: apps.create_namespaced_deployment(
            namespace, deployment(namespace, name)
        ),
        "update": update,
        "status": status,
        "patch": lambda name, obj: apps.patch_namespaced_deployment(
            name, namespace, {"spec": {"replicas": 3}}
        ),
        "delete": lambda name, obj: apps.delete_namespaced_deployment(name, namespace),
    }


def urllib3_ops(api: Any, namespace: str) -> dict[str, Callable[[str, dict], dict]]:
    import orjson

    configuration = api.configuration
    pool = api.rest_client.pool_manager
    base = f"{configuration.host}/apis/apps/v1/namespaces/{namespace}/deployments"
    auth = configuration.auth_settings().get("BearerToken", {})
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": "bench",
    }
    if auth:
        headers[auth["key"]] = auth["value"]

    def call(method: str, url: str, body: Any, content_type: str = "application/json") -> dict:
        response = pool.request(
            method,
            url,
            body=orjson.dumps(body),
            headers=dict(headers, **{"Content-Type": content_type}),
        )
        if response.status >= 300:
            raise RuntimeError(f"{method} {url}: {response.status} {response.data[:200]!r}")
        return orjson.loads(response.data)

    def update(name: str, obj: dict) -> dict:
        return call(
            "PUT",
            f"{base}/{name}",
            dict(deployment(namespace, name, 2), metadata=dict(obj["metadata"])),
        )

    def status(name: str, obj: dict) -> dict:
        return call(
            "PUT",
            f"{base}/{name}/status",
            dict(obj, status={"observedGeneration": 1, "replicas": 0}),
        )

    return {
        "create": lambda name, obj: call("POST", base, deployment(namespace, name)),
        "update": update,
        "status": status,
        "patch": lambda name, obj: call(
            "PATCH", f"{base}/{name}", {"spec": {"replicas": 3}}, "application/merge-patch+json"
        ),
        "delete": lambda name, obj: call(
            "DELETE", f"{base}/{name}", {"kind": "DeleteOptions", "apiVersion": "v1"}
        ),
    }


def official_path_ops(api: Any, namespace: str) -> dict[str, Callable[[str, dict], dict]]:
    """pyinformers' ResourceClient with its writes sent through ``call_api``, as before the lean path."""
    from pyinformers.api import _http

    _http.lean_requests = lambda api_client: None  # type: ignore[assignment]
    return pyinformers_ops(api, namespace)


CLIENTS = {
    "pyinformers": pyinformers_ops,
    "pyinformers-call-api": official_path_ops,
    "typed": typed_ops,
    "urllib3": urllib3_ops,
}


def run(
    ops: dict[str, Callable[[str, Any], Any]], prefix: str, n: int
) -> dict[str, dict[str, float]]:
    """Every op over names ``prefix-0 .. prefix-(n-1)``, op by op; CPU and wall microseconds per write."""
    names = [f"{prefix}-{i:05d}" for i in range(n)]
    last: dict[str, Any] = {}
    out: dict[str, dict[str, float]] = {}
    for op in OPS:
        fn = ops[op]
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for name in names:
            last[name] = fn(name, last.get(name))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        out[op] = {"cpu_us": cpu / n * 1e6, "wall_us": wall / n * 1e6}
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.writer")
    parser.add_argument("client", choices=sorted(CLIENTS))
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--profile", default=None)
    options = parser.parse_args(argv)

    from kubernetes import config as k8s_config

    api = k8s_config.new_client_from_config(config_file=options.kubeconfig)
    ops = CLIENTS[options.client](api, options.namespace)
    run(ops, "warm", WARMUP)
    if options.profile:
        import cProfile

        profiler = cProfile.Profile(
            time.process_time
        )  # CPU, not wall: the server answers meanwhile
        profiler.enable()
        result = run(ops, "timed", options.n)
        profiler.disable()
        profiler.dump_stats(options.profile)
    else:
        result = run(ops, "timed", options.n)
    print(json.dumps({"client": options.client, "n": options.n, "ops": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
