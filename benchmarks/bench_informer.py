"""The watch pipeline: events per second from the API server to a reconcile, against the official client.

Every consumer reads the very same recorded changes: the in-process API
server (run in a child process, so it has its own core and its own GIL)
holds ``EVENTS`` changes of realistic 5 KB Pods (two managedFields entries),
and each consumer watches from the resourceVersion before them, so the
server replays them from its history as fast as the consumer reads.
Consumers, all in this process, one after the other:

* ``watch.Watch().stream(CoreV1Api().list_namespaced_pod)`` -- the official
  client's typed watch (the baseline, 1.0x);
* ``kubernetes.informer.SharedInformer`` -- the official client's informer
  (typed, handlers on the watch thread, a counting no-op handler);
* pyinformers' ``ResourceClient.watch`` alone (raw JSON lines, orjson): what
  the transport costs without any pipeline;
* the pyinformers pipeline: Reflector -> DeltaFIFO -> Indexer -> one handler
  (on its own thread) -> RateLimitingQueue -> one worker thread calling a
  no-op ``reconcile(key)``; once keeping managedFields, once with the
  factory's default transform (drop them).

A pipeline run ends when the worker has reconciled the key of the last event
and the queue is empty. The informers start from an empty list at the
replay's first resourceVersion (their list is short-circuited), so what is
timed is the watch path alone. A last row shows the server's own ceiling
(raw bytes read, lines counted, nothing decoded).
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import statistics
import threading
import time
import uuid
from typing import Any, Callable, Optional

import orjson

NAMESPACE = "bench"
PODS = 1_200
UPDATES_PER_POD = 9
EVENTS = PODS * (1 + UPDATES_PER_POD)
REPEATS = 3


# --------------------------------------------------------------------------- a realistic Pod
def owner_uid(namespace: str) -> str:
    """The uid of the ReplicaSet owning the benchmark's Pods in ``namespace``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pyinformers-bench/{namespace}"))


def make_replica_set(namespace: str) -> dict:
    """The owner of the benchmark's Pods: it must exist, or the server's garbage collector deletes them."""
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-7d4b9c8f6d", "namespace": namespace, "uid": owner_uid(namespace),
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"pod-template-hash": "7d4b9c8f6d"}},
                     "template": {"metadata": {"labels": {"pod-template-hash": "7d4b9c8f6d"}}, "spec": {}}}}


def make_pod(i: int, namespace: str = NAMESPACE, generation: int = 0) -> dict:
    """A Pod as a ReplicaSet's pod looks on a real cluster: ~5.1 KB of JSON, ~3.2 KB without managedFields."""
    name = f"web-7d4b9c8f6d-{i:06d}"
    uid = str(uuid.UUID(int=i + 1))
    ts = "2026-01-01T00:00:00Z"
    labels = {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web-prod",
              "app.kubernetes.io/component": "frontend", "pod-template-hash": "7d4b9c8f6d"}
    container = {
        "name": "web", "image": "registry.example.com/team/web:1.24.3", "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": f"WEB_SETTING_{k}", "value": f"value-{k}"} for k in range(3)],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "initialDelaySeconds": 10,
                          "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/web"},
                         {"name": "kube-api-access-x7k2p", "readOnly": True,
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    }
    f_container = {
        ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:env": {f'k:{{"name":"WEB_SETTING_{k}"}}': {".": {}, "f:name": {}, "f:value": {}} for k in range(3)},
        "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                        "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
        "f:volumeMounts": {".": {}, 'k:{"mountPath":"/etc/web"}': {".": {}, "f:mountPath": {}, "f:name": {}}},
    }
    managed = [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": ts,
         "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, **{f"f:{k}": {} for k in labels}},
                                     "f:ownerReferences": {".": {}, f'k:{{"uid":"{uid}"}}': {}}},
                      "f:spec": {"f:containers": {'k:{"name":"web"}': f_container},
                                 "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                                 "f:schedulerName": {}, "f:securityContext": {},
                                 "f:terminationGracePeriodSeconds": {}, "f:volumes": {".": {}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts, "fieldsType": "FieldsV1",
         "subresource": "status",
         "fieldsV1": {"f:status": {
             "f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                                                      "f:status": {}, "f:type": {}}
                              for t in ("ContainersReady", "Initialized", "Ready", "PodScheduled")},
             "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}},
             "f:startTime": {}}}},
    ]
    ip = f"10.244.{(i // 250) % 250}.{i % 250}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "generateName": "web-7d4b9c8f6d-", "namespace": namespace, "uid": uid,
            "creationTimestamp": ts, "labels": labels, "annotations": {"generation": str(generation)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6d",
                                 "uid": owner_uid(namespace), "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": managed,
        },
        "spec": {
            "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                        {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt",
                                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "containers": [container],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": f"node-{i % 50:03d}",
            "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
            "enableServiceLinks": True,
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "hostIP": f"10.0.{i % 50}.1", "podIP": ip, "podIPs": [{"ip": ip}], "startTime": ts,
            "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": ts}}, "lastState": {},
                                   "ready": True, "restartCount": generation,
                                   "image": "registry.example.com/team/web:1.24.3",
                                   "imageID": "registry.example.com/team/web@sha256:" + "ab" * 32,
                                   "containerID": "containerd://" + f"{i:064x}", "started": True}],
            "qosClass": "Burstable",
        },
    }


# --------------------------------------------------------------------------- the server, in a child process
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
        server.store.put(replica_sets.storage_key, namespace, "web-7d4b9c8f6d", make_replica_set(namespace))
        before = int(server.resource_version)  # after the ReplicaSet
        started = time.perf_counter()
        for i in range(spec["pods"]):
            pod = make_pod(i, namespace)
            server.store.put(pods.storage_key, namespace, pod["metadata"]["name"], pod)
        for generation in range(1, spec.get("updates", 0) + 1):
            for i in range(spec["pods"]):
                server.store.put(pods.storage_key, namespace, f"web-7d4b9c8f6d-{i:06d}",
                                 make_pod(i, namespace, generation))
        expected = spec["pods"] * (1 + spec.get("updates", 0))
        if int(server.resource_version) - before != expected:
            raise RuntimeError(f"seeding {namespace}: {int(server.resource_version) - before} writes, "
                               f"expected {expected} (something else wrote meanwhile)")
        report["namespaces"][namespace] = {
            "rv_before": str(before), "rv_after": server.resource_version,
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


class ServerProcess:
    """The in-process API server, in a child process of its own (spawned, so nothing is shared)."""

    def __init__(self, plan: dict, *, timeout: float = 600.0) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_serve, args=(child, plan), name="bench-apiserver", daemon=True)
        self._process.start()
        if not self._conn.poll(timeout):
            self._process.kill()
            raise RuntimeError("the benchmark API server did not come up")
        self.report: dict = self._conn.recv()

    @property
    def kubeconfig(self) -> dict:
        return self.report["kubeconfig"]

    def api_client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config_dict(self.kubeconfig)

    def close(self) -> None:
        try:
            self._conn.send("stop")
        except (BrokenPipeError, OSError):
            pass
        self._process.join(30)
        if self._process.is_alive():
            self._process.kill()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --------------------------------------------------------------------------- consumers
def typed_watch(api_client: Any, rv: str, events: int) -> float:
    """The official client's typed watch; returns seconds to read ``events`` events."""
    from kubernetes import client, watch

    api = client.CoreV1Api(api_client)
    w = watch.Watch()
    seen = 0
    started = time.perf_counter()
    for _event in w.stream(api.list_namespaced_pod, NAMESPACE, resource_version=rv, timeout_seconds=300):
        seen += 1
        if seen == events:
            w.stop()
            break
    return time.perf_counter() - started


def official_informer(api_client: Any, rv: str, events: int) -> float:
    """``kubernetes.informer.SharedInformer`` with a counting handler; its initial list returns nothing at ``rv``."""
    from kubernetes import client
    from kubernetes.informer import ADDED, MODIFIED, SharedInformer

    api = client.CoreV1Api(api_client)

    @functools.wraps(api.list_namespaced_pod)  # Watch.stream reads the return type from the docstring
    def list_func(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("watch"):
            return api.list_namespaced_pod(*args, **kwargs)
        return client.V1PodList(items=[], metadata=client.V1ListMeta(resource_version=rv))

    done = threading.Event()
    count = [0]

    def on_event(obj: Any) -> None:
        count[0] += 1
        if count[0] == events:
            done.set()

    informer = SharedInformer(list_func, namespace=NAMESPACE)
    informer.add_event_handler(ADDED, on_event)
    informer.add_event_handler(MODIFIED, on_event)
    started = time.perf_counter()
    informer.start()
    if not done.wait(300):
        raise RuntimeError(f"official informer saw {count[0]} of {events} events")
    elapsed = time.perf_counter() - started
    informer._stop_event.set()  # its stop() joins a thread blocked on a quiet watch: do not wait for it
    return elapsed


def raw_watch(api_client: Any, rv: str, events: int) -> float:
    """pyinformers' ResourceClient.watch alone: raw lines decoded once with orjson."""
    from pyinformers.api.client import ResourceClient
    from pyinformers.resources import PODS as PODS_RESOURCE

    client = ResourceClient(api_client, PODS_RESOURCE)
    seen = 0
    started = time.perf_counter()
    with client.watch(NAMESPACE, resource_version=rv, allow_bookmarks=False, timeout_seconds=300) as stream:
        for _event in stream:
            seen += 1
            if seen == events:
                break
    return time.perf_counter() - started


class _ReplayListWatch:
    """A ListWatch whose list is empty at ``rv``: the informer then watches the recorded changes from ``rv``."""

    def __init__(self, inner: Any, rv: str) -> None:
        self._inner = inner
        self._rv = rv

    def list(self, **kwargs: Any) -> Any:
        from pyinformers.api.client import ListPage

        return ListPage(items=[], resource_version=self._rv)

    def watch(self, **kwargs: Any) -> Any:
        return self._inner.watch(**kwargs)


def pipeline(api_client: Any, rv: str, last_rv: str, events: int,
             transform: Optional[Callable[[Any], Any]]) -> float:
    """Reflector -> DeltaFIFO -> Indexer -> handler -> RateLimitingQueue -> worker with a no-op reconcile."""
    from pyinformers.api.client import ResourceClient
    from pyinformers.api.listwatch import ListWatch
    from pyinformers.api.meta import object_key
    from pyinformers.cache import SharedIndexInformer
    from pyinformers.resources import PODS as PODS_RESOURCE
    from pyinformers.workqueue import RateLimitingQueue

    lw = _ReplayListWatch(ListWatch(ResourceClient(api_client, PODS_RESOURCE), namespace=NAMESPACE), rv)
    informer = SharedIndexInformer(lw, name="bench-pods", transform=transform, metrics_registry=False)
    queue = RateLimitingQueue()
    last_seen = threading.Event()
    finished = threading.Event()
    notified = [0]

    class Enqueue:
        def on_add(self, obj: dict, is_in_initial_list: bool) -> None:
            self._enqueue(obj)

        def on_update(self, old: dict, new: dict) -> None:
            self._enqueue(new)

        def on_delete(self, obj: Any) -> None:
            pass

        @staticmethod
        def _enqueue(obj: dict) -> None:
            notified[0] += 1
            if notified[0] == events:
                last_seen.set()  # before the add: the worker checks it after finishing a key
            queue.add(object_key(obj))

    def reconcile(key: str) -> None:
        pass

    def worker() -> None:
        while True:
            key, shutdown = queue.get()
            if shutdown:
                return
            try:
                reconcile(key)
                queue.forget(key)
            finally:
                queue.done(key)
            if last_seen.is_set() and len(queue) == 0:
                finished.set()

    informer.add_event_handler(Enqueue())
    thread = threading.Thread(target=worker, name="pyinformers-bench-worker", daemon=True)
    thread.start()
    started = time.perf_counter()
    informer.start()
    try:
        if not finished.wait(300):
            raise RuntimeError(
                f"pipeline: {notified[0]} of {events} events reached the handler; last seen={last_seen.is_set()} "
                f"queued={len(queue)} processing={queue.processing_count()} worker alive={thread.is_alive()}")
        elapsed = time.perf_counter() - started
        if informer.indexer.get_by_key(f"{NAMESPACE}/web-7d4b9c8f6d-{PODS - 1:06d}")["metadata"][
                "resourceVersion"] != last_rv:
            raise RuntimeError("pipeline: the cache does not hold the last version")
    finally:
        informer.stop(timeout=5.0)
        queue.shutdown()
        thread.join(5.0)
    return elapsed


def server_ceiling(kubeconfig: dict, rv: str, events: int) -> float:
    """Read the replay as raw bytes and count lines: how fast the server can send."""
    import urllib3

    from kubernetes import config

    api_client = config.new_client_from_config_dict(kubeconfig)
    host = api_client.configuration.host
    api_client.close()
    http = urllib3.PoolManager()
    url = f"{host}/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion={rv}&timeoutSeconds=300"
    started = time.perf_counter()
    response = http.request("GET", url, preload_content=False, retries=False)
    seen = 0
    for chunk in response.stream(1 << 16):
        seen += chunk.count(b"\n")
        if seen >= events:
            break
    elapsed = time.perf_counter() - started
    response.release_conn()
    http.clear()
    return elapsed


# --------------------------------------------------------------------------- main
def _under_manager_gc_policy(run: Callable[[], float]) -> Callable[[], float]:
    """Run as a :class:`~pyinformers.controller.Manager` does by default (``tune_gc=True``)."""
    from pyinformers import gc_policy

    def wrapped() -> float:
        previous = gc_policy.tune_for_caches()
        try:
            return run()
        finally:
            gc_policy.restore(previous)

    return wrapped


def main() -> None:
    from pyinformers.cache import drop_managed_fields

    logging.getLogger("kubernetes.informer").setLevel(logging.CRITICAL)  # its reconnect noise at teardown
    sample = make_pod(0)
    size = len(orjson.dumps(sample))
    del sample["metadata"]["managedFields"]
    print(f"{EVENTS:,} watch events of a {size / 1000:.1f} KB Pod ({len(orjson.dumps(sample)) / 1000:.1f} KB "
          f"without managedFields), replayed by a server in its own process; median of {REPEATS} interleaved runs")
    plan = {"namespaces": {NAMESPACE: {"pods": PODS, "updates": UPDATES_PER_POD}}}
    with ServerProcess(plan) as server:
        info = server.report["namespaces"][NAMESPACE]
        rv, last_rv = info["rv_before"], info["rv_after"]
        api_client = server.api_client()
        consumers: list[tuple[str, Callable[[], float]]] = [
            ("official watch.Watch().stream, typed V1Pod", lambda: typed_watch(api_client, rv, EVENTS)),
            ("official kubernetes.informer.SharedInformer", lambda: official_informer(api_client, rv, EVENTS)),
            ("pyinformers ResourceClient.watch alone (no pipeline)", lambda: raw_watch(api_client, rv, EVENTS)),
            ("pyinformers pipeline, managedFields kept", lambda: pipeline(api_client, rv, last_rv, EVENTS, None)),
            ("pyinformers pipeline, default (drop managedFields)",
             lambda: pipeline(api_client, rv, last_rv, EVENTS, drop_managed_fields)),
            ("  the same under the Manager's GC policy (gc_policy)",
             _under_manager_gc_policy(lambda: pipeline(api_client, rv, last_rv, EVENTS, drop_managed_fields))),
            ("server ceiling: raw bytes, lines counted, no decode",
             lambda: server_ceiling(server.kubeconfig, rv, EVENTS)),
        ]
        rates: dict[str, list[float]] = {label: [] for label, _ in consumers}
        try:
            for round_ in range(REPEATS):  # interleaved, so a noisy neighbour hurts every consumer alike
                for label, run in consumers:
                    rates[label].append(EVENTS / run())
                print(f"  round {round_ + 1}/{REPEATS} done", flush=True)
        finally:
            api_client.close()
    medians = {label: statistics.median(values) for label, values in rates.items()}
    baseline = medians[consumers[0][0]]
    width = max(len(label) for label in rates)
    print()
    print(f"{'consumer':<{width}}  {'events/s':>10}  {'x typed watch':>13}  runs")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 13}  ----")
    for label, values in rates.items():
        runs = ", ".join(f"{r:,.0f}" for r in values)
        print(f"{label:<{width}}  {medians[label]:>10,.0f}  {medians[label] / baseline:>12.1f}x  {runs}")
    print("\npipeline: server -> Reflector -> DeltaFIFO -> Indexer -> handler thread -> RateLimitingQueue -> "
          "1 worker, no-op reconcile (aim: >= 6x typed watch).")
    print("GC note: every cached object survives into the oldest generation until its next version replaces it,")
    print("and CPython runs a full collection whenever those survivors reach a quarter of the old generation,")
    print("so with default thresholds full collections cost tens of us per event whatever the cache size.")
    print("pyinformers.gc_policy.tune_for_caches() makes them rare; the Manager applies it by default")
    print("(tune_gc=True) because it is the application; a factory alone leaves the process's GC as it found it.")


if __name__ == "__main__":
    main()
