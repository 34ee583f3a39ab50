"""Conflicts per 1,000 reconciles with and without the stale-read guard, under a delayed watch.

The in-process API server; an informer that reads it through a TCP proxy
holding every byte from the server back for ``DELAY`` seconds (a watch that
trails the server, as on a loaded cluster), while the reconcile writes
straight to the server. 20 ConfigMaps are counted from 0 to 50, one
optimistic-concurrency replace per reconcile (it carries the cached
resourceVersion), each reconcile asking to be run again at once
(``Result(requeue_after=0)``), by a controller with 2 workers: 1,000
successful writes per run. Reported per run: reconciles, conflicts (409s
the reconcile got from its own stale reads) and conflicts per 1,000
reconciles, with the guard on (``read_your_writes=True``, the default)
and off, and the wall time to count everything.
"""

from __future__ import annotations

import time

from pyinformers.api import Conflict, ResourceClient
from pyinformers.api.meta import deep_copy, split_key
from pyinformers.cache import SharedInformerFactory
from pyinformers.controller import Controller, Result
from pyinformers.resources import CONFIGMAPS, NAMESPACES
from pyinformers.testing import eventually
from pyinformers.testing.apiserver import ApiServer
from tests.support.tcp_fault_proxy import TcpFaultProxy

OBJECTS = 20
STEPS = 50
DELAY = 0.1


class _Counter(Controller):
    def __init__(self, factory, writer, guard):
        super().__init__("bench-stale", workers=2, metrics_registry=False, read_your_writes=guard)
        self.configmaps = factory.lister(CONFIGMAPS)
        self.writer = writer
        self.reconciles = self.conflicts = 0
        self.watch(factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        ns, name = split_key(key)
        cached = self.configmaps.namespace(ns).get(name)
        if cached is None:
            return None
        self.reconciles += 1
        n = int(cached["data"]["n"])
        if n >= STEPS:
            return None
        new = deep_copy(cached)
        new["data"]["n"] = str(n + 1)
        try:
            self.writer.replace(new)
        except Conflict:
            self.conflicts += 1
            raise
        return Result(requeue_after=0)


def _run(guard: bool) -> dict:
    import logging

    logging.getLogger("pyinformers.controller.bench-stale").setLevel(logging.WARNING)
    with ApiServer() as server:
        host, port = server.url.split("//")[1].split(":")
        with TcpFaultProxy(host, int(port)) as proxy:
            direct = server.api_client()
            proxied = server.api_client()
            proxied.configuration.host = proxy.url("http")
            writer = ResourceClient(direct, CONFIGMAPS)
            ns = f"bench-{'on' if guard else 'off'}"
            ResourceClient(direct, NAMESPACES).create({"metadata": {"name": ns}})
            for i in range(OBJECTS):
                writer.create(
                    {"metadata": {"name": f"cm-{i}", "namespace": ns}, "data": {"n": "0"}}
                )
            factory = SharedInformerFactory(proxied, namespace=ns, metrics_registry=False)
            controller = _Counter(factory, writer, guard)
            factory.start()
            controller.start()
            proxy.delay = DELAY
            started = time.monotonic()
            try:
                eventually(
                    lambda: all(o["data"]["n"] == str(STEPS) for o in writer.list(ns).items),
                    600,
                    what="every counter at its target",
                )
                wall = time.monotonic() - started
            finally:
                controller.stop(5)
                factory.stop(5)
    return {
        "reconciles": controller.reconciles,
        "conflicts": controller.conflicts,
        "per_1000": 1000.0 * controller.conflicts / max(1, controller.reconciles),
        "wall": wall,
    }


def main() -> None:
    for guard in (False, True):
        r = _run(guard)
        print(
            f"guard {'on ' if guard else 'off'}: {r['reconciles']} reconciles, {r['conflicts']} conflicts "
            f"= {r['per_1000']:.0f} per 1,000 reconciles; {OBJECTS * STEPS} writes in {r['wall']:.1f} s "
            f"(watch delayed {DELAY * 1000:.0f} ms)"
        )


if __name__ == "__main__":
    main()
