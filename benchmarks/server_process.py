"""The in-process test API server (:class:`pyinformers.testing.ApiServer`) in a child process of its own.

Used by the benchmarks that need a real server (writes, paged lists served by
the test server's storage): spawned, so it has its own core and its own GIL,
and seeded before the parent measures anything.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

from benchmarks.pods import make_pod, make_replica_set


def _serve(conn: Any, plan: dict) -> None:
    """Child process: run an ApiServer, seed it per ``plan``, report, serve until told to stop."""
    import gc

    from pyinformers.testing import ApiServer

    server = ApiServer(history_limit=plan.get("history_limit", 100_000), bookmark_interval=60.0)
    server.start()
    namespaces = server.registry.find("namespaces", "")
    pods = server.registry.find("pods", "")
    replica_sets = server.registry.find("replicasets", "apps")
    report: dict[str, Any] = {"kubeconfig": server.kubeconfig(), "namespaces": {}}
    gc.disable()  # seeding builds a big heap; the collector would only slow it down
    for namespace, spec in plan["namespaces"].items():
        server.rest.create(namespaces, None, {"metadata": {"name": namespace}})
        server.store.put(
            replica_sets.storage_key, namespace, "web-7d4b9c8f6d", make_replica_set(namespace)
        )
        before = int(server.resource_version)  # after the ReplicaSet
        started = time.perf_counter()
        for i in range(spec["pods"]):
            pod = make_pod(i, namespace)
            server.store.put(pods.storage_key, namespace, pod["metadata"]["name"], pod)
        for generation in range(1, spec.get("updates", 0) + 1):
            for i in range(spec["pods"]):
                server.store.put(
                    pods.storage_key,
                    namespace,
                    f"web-7d4b9c8f6d-{i:06d}",
                    make_pod(i, namespace, generation),
                )
        expected = spec["pods"] * (1 + spec.get("updates", 0))
        if int(server.resource_version) - before != expected:
            raise RuntimeError(
                f"seeding {namespace}: {int(server.resource_version) - before} writes, "
                f"expected {expected} (something else wrote meanwhile)"
            )
        report["namespaces"][namespace] = {
            "rv_before": str(before),
            "rv_after": server.resource_version,
            "seconds": time.perf_counter() - started,
        }
    gc.collect()
    gc.freeze()  # the seeded objects live forever: keep the server's collector off them
    gc.enable()
    conn.send(report)
    try:
        conn.recv()  # any message (or the parent's end) stops the server
    except EOFError:
        pass
    server.stop()


class ChildServer:
    """A benchmark server running ``target(conn, plan)`` in a spawned child process of its own.

    The child sends one report on the pipe once it serves (kept as
    :attr:`report`), then waits: any message, or the parent's end of the pipe,
    stops it. :meth:`close` (or leaving the ``with`` block) asks it to stop and
    kills it if it has not exited within 30 s.
    """

    def __init__(self, target: Any, plan: dict, *, name: str, timeout: float = 600.0) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=target, args=(child, plan), name=name, daemon=True)
        self._process.start()
        if not self._conn.poll(timeout):
            self._process.kill()
            raise RuntimeError(f"the benchmark server {name} did not come up")
        self.report: dict = self._conn.recv()
        self.pid: int | None = self._process.pid

    def close(self) -> None:
        try:
            self._conn.send("stop")
        except (BrokenPipeError, OSError):
            pass
        self._process.join(30)
        if self._process.is_alive():
            self._process.kill()

    def __enter__(self) -> ChildServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ServerProcess(ChildServer):
    """The in-process API server, in a child process of its own (spawned, so nothing is shared)."""

    def __init__(self, plan: dict, *, timeout: float = 600.0) -> None:
        super().__init__(_serve, plan, name="bench-apiserver", timeout=timeout)

    @property
    def kubeconfig(self) -> dict:
        return self.report["kubeconfig"]

    def api_client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config_dict(self.kubeconfig)
