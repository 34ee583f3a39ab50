"""``DeploymentSimulator``: Deployments become available on a server without kubelets.

A test control plane has no scheduler and no kubelet, so no Pod ever runs and
no Deployment ever becomes available; the samples' scenarios wait for exactly
that. This simulator is an ordinary pyinformers controller (two, sharing one
informer factory) that plays the missing parts, against any server, through
the API only:

* **Pods** controlled by a ReplicaSet that are not Ready are bound to a
  made-up node (``pods/binding``, as a scheduler would) and then reported
  Running and Ready (``pods/status``, as a kubelet would). Where a Deployment
  and ReplicaSet controller run (a real control plane with
  kube-controller-manager, or a cluster), they then count the Pods and mark
  the Deployment available themselves.
* **Deployments** that have no ReplicaSet of their own after ``delay``
  seconds (nobody runs a Deployment controller: the embedded server, or a
  control plane without kube-controller-manager) get the status a healthy
  Deployment controller would write (:func:`~.workloads.desired_status`):
  the replicas counts follow ``spec.replicas`` and ``Available`` is True.

Both wait ``delay`` seconds after first seeing an object, so a watcher sees
the intermediate state. Bare Pods (without a controller) are left alone.

The in-process server has a faster built-in equivalent
(``ApiServer(simulate_workloads=True)``, :mod:`.workloads`); this one works
on any server, which is what ``python -m samples.demo --kubeconfig F
--simulate-workloads`` needs.

Thread-safety: ``start``/``stop`` from the owner; the controllers' reconciles
run on their own worker threads.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from prometheus_client import CollectorRegistry

from pyinformers.api import meta
from pyinformers.api._client import ResourceClient
from pyinformers.api._errors import NotFound
from pyinformers.cache._factory import SharedInformerFactory
from pyinformers.cache._lister import Lister
from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.controller import Controller, Result
from pyinformers.resources import DEPLOYMENTS, PODS, REPLICASETS
from pyinformers.testing.apiserver._workloads import desired_status, settled

__all__ = ["DeploymentSimulator", "SIMULATED_NODE"]

#: The node name simulated Pods are bound to.
SIMULATED_NODE = "pyinformers-simulated-node"


def _rfc3339(epoch: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def _ready(pod: dict) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def running_status(pod: dict, timestamp: str) -> dict:
    """The status a kubelet reports for ``pod`` once all its containers run and are ready."""
    status = dict(pod.get("status") or {})
    containers = (pod.get("spec") or {}).get("containers") or ()
    status.update(
        {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "startTime": status.get("startTime") or timestamp,
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": timestamp,
                }
                for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": c.get("name"),
                    "image": c.get("image") or "",
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": timestamp}},
                }
                for c in containers
            ],
        }
    )
    return status


class _Delayed:
    """Remembers when each key was first seen unsettled; says how long it still has to wait."""

    def __init__(self, clock: Clock, delay: float) -> None:
        self._clock = clock
        self._delay = delay
        self._first_seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def remaining(self, key: str) -> float:
        now = self._clock.now()
        with self._lock:
            first = self._first_seen.setdefault(key, now)
        return max(0.0, first + self._delay - now)

    def forget(self, key: str) -> None:
        with self._lock:
            self._first_seen.pop(key, None)

    def postpone(self, key: str, pending: bool) -> Result | None:
        """What a reconcile returns instead of acting on ``key``, or None to act now.

        ``pending`` says the object needs work; if not, the key is forgotten and
        the reconcile is done. A pending key waits out the delay first.
        """
        if not pending:
            self.forget(key)
            return Result()
        wait = self.remaining(key)
        if wait > 0:
            return Result(requeue_after=wait)
        self.forget(key)
        return None


class _DeploymentStatus(Controller):
    """Writes a healthy status on Deployments nobody else manages."""

    def __init__(self, factory: SharedInformerFactory, delay: float, **options: Any) -> None:
        super().__init__("simulate-deployments", **options)
        self._deployments: Lister[Any] = factory.lister(DEPLOYMENTS)
        self._replicasets = factory.lister(REPLICASETS)
        self._client: ResourceClient[Any] = factory.client(DEPLOYMENTS)
        self._delayed = _Delayed(self.clock, delay)
        self.watch(factory.informer(DEPLOYMENTS))
        self.watch(factory.informer(REPLICASETS))  # only so its cache is synced before we judge

    def _managed_elsewhere(self, deployment: dict) -> bool:
        """True when a ReplicaSet controlled by ``deployment`` exists: a real Deployment controller runs."""
        namespace = deployment["metadata"].get("namespace")
        return any(
            meta.is_controlled_by(rs, deployment)
            for rs in self._replicasets.list(namespace=namespace)
        )

    def reconcile(self, key: str) -> Result | None:
        namespace, name = meta.split_key(key)
        deployment = self._deployments.get(name, namespace=namespace)
        pending = (
            deployment is not None
            and not deployment["metadata"].get("deletionTimestamp")
            and not settled(deployment)
        )
        later = self._delayed.postpone(key, pending)
        if later is not None or deployment is None:
            return later
        if self._managed_elsewhere(deployment):
            return None
        updated = copy.deepcopy(deployment)
        updated["status"] = desired_status(deployment, _rfc3339(self.clock.time()))
        try:
            self._client.replace_status(updated)
        except NotFound:
            return None
        return None


class _PodReadiness(Controller):
    """Binds controlled Pods to a made-up node and reports them Running and Ready."""

    def __init__(self, factory: SharedInformerFactory, delay: float, **options: Any) -> None:
        super().__init__("simulate-pods", **options)
        self._pods: Lister[Any] = factory.lister(PODS)
        self._client: ResourceClient[Any] = factory.client(PODS)
        self._api_client = factory.api_client
        self._delayed = _Delayed(self.clock, delay)
        self.watch(factory.informer(PODS))

    def _bind(self, pod: dict) -> None:
        from kubernetes import client as k8s

        md = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": md["name"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": SIMULATED_NODE},
        }
        # _preload_content=False: the generated client cannot decode the Status this answers.
        response = k8s.CoreV1Api(self._api_client).create_namespaced_pod_binding(
            md["name"], md["namespace"], body, _preload_content=False
        )
        response.release_conn()

    def reconcile(self, key: str) -> Result | None:
        namespace, name = meta.split_key(key)
        pod = self._pods.get(name, namespace=namespace)
        pending = (
            pod is not None
            and not pod["metadata"].get("deletionTimestamp")
            and not _ready(pod)
            and meta.controller_of(pod) is not None
        )
        later = self._delayed.postpone(key, pending)
        if later is not None or pod is None:
            return later
        try:
            if not (pod.get("spec") or {}).get("nodeName"):
                self._bind(pod)
                pod = self._client.get(name, namespace)
            updated = copy.deepcopy(pod)
            updated["status"] = running_status(pod, _rfc3339(self.clock.time()))
            self._client.replace_status(updated)
        except NotFound:
            return None
        return None


class DeploymentSimulator:
    """Makes Deployments become available on a server with no kubelet (see the module docstring).

    ``api_client`` is used (not closed) by the simulator; ``namespace``
    limits it to one namespace (default: all). ``delay`` is how long, in
    seconds of ``clock`` time, an object waits before the simulator acts.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str | None = None,
        delay: float = 0.5,
        clock: Clock | None = None,
        metrics_registry: Any = None,
    ) -> None:
        clock = clock or REAL_CLOCK
        registry = metrics_registry if metrics_registry is not None else CollectorRegistry()
        self._factory = SharedInformerFactory(
            api_client, namespace=namespace, clock=clock, metrics_registry=registry
        )
        self._controllers = [
            _DeploymentStatus(self._factory, delay, clock=clock, metrics_registry=registry),
            _PodReadiness(self._factory, delay, clock=clock, metrics_registry=registry),
        ]

    def __repr__(self) -> str:
        return f"<DeploymentSimulator controllers={[c.name for c in self._controllers]}>"

    def start(self) -> DeploymentSimulator:
        self._factory.start()
        for controller in self._controllers:
            controller.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the controllers and informers; True if everything stopped within ``timeout`` each."""
        ok = all([controller.stop(timeout) for controller in self._controllers])
        return self._factory.stop(timeout) and ok

    def __enter__(self) -> DeploymentSimulator:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
