"""The Python consumers of the pipeline benchmark, each run in a fresh process.

``python -m benchmarks.consumers NAME --server URL --plan JSON`` syncs a cache
from the benchmark server (:mod:`benchmarks.watchserver`), gets ready (cache
synced, initial keys reconciled), starts its clocks, releases the server's
gate and consumes the watch events until it has seen the last one. It prints
one line ``RESULT {json}``: wall seconds, process CPU seconds (all threads),
sync seconds, RSS and peak RSS, and the cyclic GC's collections and longest
pause during the timed window (measured with ``gc.callbacks``).

Consumers (what a user of each would write, no more):

* ``pyinformers`` -- ``SharedInformerFactory(api_client)`` with its
  defaults and a ``Controller`` subclass with one worker, as the quickstart
  shows; ``pyinformers-manager`` -- the same Controller run by a ``Manager``
  with its defaults (GC policy, ``/metrics`` and probes served, ``run()``);
  ``pyinformers-10-informers`` -- ten namespaces, ten informers, one controller;
* ``typed-watch`` -- ``watch.Watch().stream(list_namespaced_pod)``, typed
  ``V1Pod`` models (no cache);
* ``official-informer`` -- ``kubernetes.informer.SharedInformer`` (typed,
  unpaged list) with handlers adding keys to a ``queue.Queue`` drained by
  one worker thread;
* ``minimal`` -- the floor a hand-written Python pipeline reaches: urllib3,
  orjson, a dict store under a lock, a deduplicating queue and one worker;
* ``latency`` -- pyinformers defaults against paced events: the time from
  the server sending an event to the start of the reconcile that sees it.

kopf and client-go run in their own programs (:mod:`benchmarks.kopf_consumer`,
``benchmarks/clientgo``), measured the same way.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import ssl
import sys
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from typing import Any

_PAGE = 500


# --------------------------------------------------------------------------- measuring
def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def peak_rss_kb() -> int:
    """Peak RSS of this program in KiB: ``VmHWM``, not ``ru_maxrss``, which Linux carries over from the
    parent's RSS at fork through exec (a child of a large ``make bench`` process reported the parent's
    size as its own peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class GCWatch:
    """Collections per generation and the longest pause, from ``gc.callbacks``, while armed."""

    def __init__(self) -> None:
        self.armed = False
        self.collections = [0, 0, 0]
        self.max_pause = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif self.armed:
            pause = time.perf_counter() - self._start
            self.collections[info["generation"]] += 1
            if pause > self.max_pause:
                self.max_pause = pause


def context_switches() -> tuple[int, int]:
    """(voluntary, involuntary) context switches of the process so far, all threads.

    Voluntary switches count the times a thread blocked (a wake-up of another thread
    follows each hand-off): they measure the hand-offs per event whatever the load.
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw, usage.ru_nivcsw


#: The CA file of an https benchmark server (its self-signed certificate), from the harness.
CA_FILE: str | None = os.environ.get("BENCH_CA") or None


def release_gate(server: str) -> None:
    request = urllib.request.Request(f"{server}/_bench/go", data=b"", method="POST")
    context = ssl.create_default_context(cafile=CA_FILE) if CA_FILE else None
    with urllib.request.urlopen(request, timeout=30, context=context) as response:
        response.read()


class Timing:
    """Clocks of one consumer: the sync, then the timed window around the events."""

    def __init__(self) -> None:
        import kubernetes.client  # noqa: F401 - the libraries every consumer loads, before the baseline RSS
        import orjson  # noqa: F401
        import urllib3  # noqa: F401

        self.gc = GCWatch()
        self.started = time.perf_counter()
        gc.collect()
        self.result: dict[str, Any] = {"rss_base_kb": rss_kb()}

    def ready(self, server: str) -> None:
        """Synced: note the sync time and memory, start the clocks, release the gate."""
        self.result["sync_seconds"] = time.perf_counter() - self.started
        # No gc.collect() here: a full collection would reset the collector's bookkeeping and
        # make the steady state that follows look better than what an application sees.
        self.result["rss_synced_kb"] = rss_kb()
        self.result["peak_rss_synced_kb"] = peak_rss_kb()
        # What the consumer runs under (a Manager applies its GC policy: rare full collections, frozen caches).
        self.result["gc_threshold"] = list(gc.get_threshold())
        self.result["gc_frozen"] = gc.get_freeze_count()
        self.gc.armed = True
        self._switches0 = context_switches()
        self._times0 = os.times()
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        release_gate(server)

    def finished(self) -> None:
        self.result["wall"] = time.perf_counter() - self._wall0
        self.result["cpu"] = time.process_time() - self._cpu0
        times = os.times()
        self.result["cpu_user"] = times.user - self._times0.user
        self.result["cpu_system"] = times.system - self._times0.system
        voluntary, involuntary = context_switches()
        self.result["context_switches"] = [
            voluntary - self._switches0[0],
            involuntary - self._switches0[1],
        ]
        self.gc.armed = False
        self.result["gc_collections"] = list(self.gc.collections)
        self.result["gc_max_pause_ms"] = self.gc.max_pause * 1000
        self.result["peak_rss_kb"] = peak_rss_kb()


def api_client(server: str) -> Any:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = server
    configuration.ssl_ca_cert = CA_FILE
    return client.ApiClient(configuration)


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.002)


# --------------------------------------------------------------------------- pyinformers
def pyinformers(server: str, plan: dict, *, manager: bool = False, latency: bool = False) -> dict:
    """The factory and a Controller with one worker, defaults everywhere (see docs/quickstart.rst).

    ``manager``: the same Controller run by a :class:`~pyinformers.manager.Manager` with its
    defaults, as the quickstart's ``main`` does: ``manager.run()`` in the main thread (its stop
    poll, its signal handlers), the GC policy, ``/metrics`` and the probes served (on free
    loopback ports, so that parallel runs never collide), ``/version`` checked at start; no
    leader election (its default: a single replica). The clocks run on a thread of their own,
    which stops the manager at the end.
    """
    from pyinformers.api import meta
    from pyinformers.cache import SharedInformerFactory
    from pyinformers.controller import Controller
    from pyinformers.manager import ANY_PORT, Manager
    from pyinformers.resources import PODS

    timing = Timing()
    namespaces = plan["namespaces"]
    last = {info["last_key"]: info["last_rv"] for info in namespaces.values()}
    remaining = set(last)
    done = threading.Event()
    delays: list[float] = []

    class Bench(Controller):
        def __init__(self, factory: SharedInformerFactory) -> None:
            super().__init__("bench", workers=1)
            self.listers = {}
            for ns in namespaces:
                self.listers[ns] = factory.lister(PODS, namespace=ns)
                self.watch(factory.informer(PODS, namespace=ns))

        def reconcile(self, key: str) -> None:
            namespace, name = meta.split_key(key)
            pod = self.listers[namespace].namespace(namespace).get(name)
            if pod is None:
                return None
            if latency:
                sent = pod["metadata"].get("annotations", {}).get("bench/sent")
                if sent and timing.gc.armed:
                    delays.append(time.time() - float(sent))
            if key in remaining and pod["metadata"]["resourceVersion"] == last[key]:
                remaining.discard(key)
                if not remaining:
                    done.set()
            return None

    objects = sum(info["pods"] for info in namespaces.values())

    def measure(controller: Bench, started: Callable[[], bool]) -> None:
        """Wait until the initial keys are reconciled, then time the events."""

        def initial_keys_reconciled() -> bool:
            if not started():
                return False
            results = controller.metrics.snapshot()[0]
            if results[1]:  # a reconcile raised: the benchmark is broken, do not wait for it
                raise RuntimeError("a reconcile failed (see the log)")
            return (
                results[0] >= objects
                and len(controller.queue) == 0
                and controller.queue.processing_count() == 0
            )

        wait_until(initial_keys_reconciled, 600, "initial keys not reconciled")
        timing.ready(server)
        if not done.wait(600):
            raise TimeoutError(f"the last events were not reconciled: {sorted(remaining)[:3]}")
        timing.finished()

    if manager:
        runner = Manager(
            api_client=api_client(server),
            metrics_port=ANY_PORT,
            health_port=ANY_PORT,
            bind_address="127.0.0.1",
        )
        controller = Bench(runner.factory)
        runner.add(controller)
        failure: list[BaseException] = []

        def clocks() -> None:
            try:
                measure(
                    controller,
                    lambda: runner.health_address is not None and controller.workers_alive(),
                )
            except BaseException as error:  # noqa: BLE001 - reported by the main thread
                failure.append(error)
            finally:
                runner.stop(5)

        threading.Thread(target=clocks, name="bench-clocks", daemon=True).start()
        runner.run()  # until the clocks' thread stops it
        if failure:
            raise failure[0]
        timing.result["manager"] = {
            "metrics": runner.metrics_address is not None,
            "probes": runner.health_address is not None,
        }
    else:
        factory = SharedInformerFactory(api_client(server))
        controller = Bench(factory)
        factory.start()
        controller.start()  # waits for the caches
        measure(controller, lambda: True)
        controller.stop(5)
        factory.stop(5)
    if latency:
        timing.result["latency_ms"] = [d * 1000 for d in delays]
    return timing.result


# --------------------------------------------------------------------------- the official client
def typed_watch(server: str, plan: dict) -> dict:
    """``watch.Watch().stream(list_namespaced_pod)``: typed V1Pod per event, no cache."""
    from kubernetes import client, watch

    ((ns, info),) = plan["namespaces"].items()
    timing = Timing()
    api = client.CoreV1Api(api_client(server))
    w = watch.Watch()
    timing.ready(server)  # no cache to sync; the gate is open for the watch below
    seen = 0
    for _event in w.stream(
        api.list_namespaced_pod, ns, resource_version=info["list_rv"], timeout_seconds=3600
    ):
        seen += 1
        if seen == info["events"]:
            break
    timing.finished()
    w.stop()
    return timing.result


def official_informer(server: str, plan: dict) -> dict:
    """``kubernetes.informer.SharedInformer``: handlers put keys on a ``queue.Queue``; one worker."""
    import queue

    from kubernetes import client
    from kubernetes.informer import ADDED, MODIFIED, SharedInformer

    ((ns, info),) = plan["namespaces"].items()
    timing = Timing()
    api = client.CoreV1Api(api_client(server))
    informer = SharedInformer(api.list_namespaced_pod, namespace=ns)
    keys: queue.Queue[str] = queue.Queue()
    done = threading.Event()
    reconciled = [0]

    def enqueue(pod: Any) -> None:
        keys.put(f"{pod.metadata.namespace}/{pod.metadata.name}")

    def worker() -> None:
        while True:
            key = keys.get()
            pod = informer.cache.get_by_key(key)
            reconciled[0] += 1
            if (
                key == info["last_key"]
                and pod is not None
                and pod.metadata.resource_version == info["last_rv"]
            ):
                done.set()
            keys.task_done()

    informer.add_event_handler(ADDED, enqueue)
    informer.add_event_handler(MODIFIED, enqueue)
    threading.Thread(target=worker, daemon=True).start()
    informer.start()
    wait_until(
        lambda: reconciled[0] >= info["pods"] and keys.unfinished_tasks == 0, 600, "no initial list"
    )
    timing.ready(server)
    if not done.wait(600):
        raise TimeoutError("official informer: the last event was not reconciled")
    timing.finished()
    return timing.result


# --------------------------------------------------------------------------- the floor
class DedupQueue:
    """client-go's queue semantics at their simplest: deque + dirty set + processing set, one Condition."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.queue: deque = deque()
        self.dirty: set = set()
        self.processing: set = set()

    def add(self, key: str) -> None:
        with self.cond:
            if key in self.dirty:
                return
            self.dirty.add(key)
            if key not in self.processing:
                self.queue.append(key)
                self.cond.notify()

    def get(self) -> str:
        with self.cond:
            while not self.queue:
                self.cond.wait()
            key = self.queue.popleft()
            self.dirty.discard(key)
            self.processing.add(key)
            return key

    def done(self, key: str) -> None:
        with self.cond:
            self.processing.discard(key)
            if key in self.dirty:
                self.queue.append(key)
                self.cond.notify()


def minimal(server: str, plan: dict) -> dict:
    """urllib3 + orjson + a dict store under a lock + DedupQueue + one worker thread."""
    import orjson
    import urllib3

    ((ns, info),) = plan["namespaces"].items()
    timing = Timing()
    http = urllib3.PoolManager(ca_certs=CA_FILE)
    base = f"{server}/api/v1/namespaces/{ns}/pods"
    store: dict[str, dict] = {}
    lock = threading.Lock()
    work = DedupQueue()
    done = threading.Event()
    reconciled = [0]

    def key_of(obj: dict) -> str:
        md = obj["metadata"]
        return f"{md['namespace']}/{md['name']}"

    def worker() -> None:
        while True:
            key = work.get()
            with lock:
                pod = store.get(key)
            if (
                key == info["last_key"]
                and pod is not None
                and pod["metadata"]["resourceVersion"] == info["last_rv"]
            ):
                done.set()
            reconciled[0] += 1
            work.done(key)

    threading.Thread(target=worker, daemon=True).start()
    token = ""
    while True:
        body = orjson.loads(
            http.request(
                "GET", f"{base}?limit={_PAGE}" + (f"&continue={token}" if token else "")
            ).data
        )
        for obj in body["items"]:
            key = key_of(obj)
            with lock:
                store[key] = obj
            work.add(key)
        token = body["metadata"].get("continue")
        if not token:
            break
    rv = body["metadata"]["resourceVersion"]
    wait_until(
        lambda: reconciled[0] >= info["pods"] and not work.queue and not work.processing,
        600,
        "initial",
    )
    timing.ready(server)
    response = http.request("GET", f"{base}?watch=true&resourceVersion={rv}", preload_content=False)
    pending = b""
    loads = orjson.loads
    seen = 0
    for chunk in response.read_chunked():
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            obj = loads(line)["object"]
            key = key_of(obj)
            with lock:
                store[key] = obj
            work.add(key)
            seen += 1
        if seen >= info["events"]:
            break
    if not done.wait(600):
        raise TimeoutError("minimal: the last event was not reconciled")
    timing.finished()
    response.release_conn()
    return timing.result


CONSUMERS: dict[str, Callable[[str, dict], dict]] = {
    "pyinformers": pyinformers,
    "pyinformers-manager": lambda server, plan: pyinformers(server, plan, manager=True),
    "pyinformers-10-informers": pyinformers,
    "latency": lambda server, plan: pyinformers(server, plan, latency=True),
    "typed-watch": typed_watch,
    "official-informer": official_informer,
    "minimal": minimal,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.consumers")
    parser.add_argument("consumer", choices=sorted(CONSUMERS))
    parser.add_argument("--server", required=True)
    parser.add_argument("--plan", required=True, help="JSON: {namespaces: {ns: server info}}")
    args = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.ERROR)
    result = CONSUMERS[args.consumer](args.server, json.loads(args.plan))
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
