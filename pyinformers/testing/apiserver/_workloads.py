"""Simulated workloads: the parts of a cluster the demo needs, played by the server.

With ``ApiServer(simulate_workloads=True)`` a Deployment's status follows its
spec after ``delay`` seconds, as if a ReplicaSet controller, a scheduler and
kubelets had done their work: ``observedGeneration``, ``replicas``,
``updatedReplicas``, ``readyReplicas`` and ``availableReplicas`` become
``spec.replicas`` (default 1) and an ``Available`` condition is set. No Pods
or ReplicaSets are created.

The simulator listens to the store (queuing work only) and writes from its own
daemon thread, ``pyinformers-apiserver-workloads``, through the REST layer's
status writes, so controllers see ordinary MODIFIED events.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from pyinformers.testing.apiserver._background import StoreListenerThread
from pyinformers.testing.apiserver._objects import now_rfc3339
from pyinformers.testing.apiserver._rest import RestApi
from pyinformers.testing.apiserver._storage import Change, ChangeType

__all__ = ["WorkloadSimulator", "desired_status", "settled"]

_DEPLOYMENTS = "apps/deployments"


def desired_status(deployment: dict, timestamp: str) -> dict:
    """The status a healthy cluster would report for ``deployment``."""
    spec = deployment.get("spec") or {}
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 0:
        replicas = 0
    previous = {c.get("type"): c for c in (deployment.get("status") or {}).get("conditions") or ()}
    available = previous.get("Available")
    if available is None or available.get("status") != "True":
        available = {
            "type": "Available",
            "status": "True",
            "reason": "MinimumReplicasAvailable",
            "message": "Deployment has minimum availability.",
            "lastTransitionTime": timestamp,
            "lastUpdateTime": timestamp,
        }
    return {
        "observedGeneration": (deployment.get("metadata") or {}).get("generation", 1),
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [available],
    }


def settled(deployment: dict) -> bool:
    """True when ``deployment``'s status already says it is rolled out and available as specified."""
    status = deployment.get("status") or {}
    want = (deployment.get("spec") or {}).get("replicas", 1)
    return (
        status.get("observedGeneration") == (deployment.get("metadata") or {}).get("generation", 1)
        and status.get("replicas") == want
        and status.get("readyReplicas") == want
        and status.get("availableReplicas") == want
    )


class WorkloadSimulator(StoreListenerThread):
    """Makes Deployment status follow spec after a delay. Thread-safe; one worker thread."""

    def __init__(
        self, rest: RestApi, *, delay: float = 0.5, time_func: Callable[[], float] = time.time
    ) -> None:
        self._delay = delay
        self._time = time_func
        self._due: list[
            tuple[float, str, str]
        ] = []  # heap of (monotonic deadline, namespace, name)
        super().__init__(rest, thread_name="pyinformers-apiserver-workloads")

    def __repr__(self) -> str:
        return f"<WorkloadSimulator pending={len(self._due)} delay={self._delay}>"

    def _on_change(self, change: Change) -> None:
        if change.storage_key != _DEPLOYMENTS or change.type is ChangeType.DELETED:
            return
        if settled(change.obj) or (change.obj.get("metadata") or {}).get("deletionTimestamp"):
            return
        with self._cond:
            heapq.heappush(
                self._due, (time.monotonic() + self._delay, change.namespace, change.name)
            )
            self._cond.notify()

    def _run(self) -> None:
        rt = self._rest.registry.lookup("apps", "v1", "deployments")
        while True:
            with self._cond:
                while not self._stopped:
                    if self._due:
                        remaining = self._due[0][0] - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                    else:
                        self._cond.wait()
                if self._stopped:
                    return
                _, namespace, name = heapq.heappop(self._due)
            deployment = self._rest.store.get(_DEPLOYMENTS, namespace, name)
            if rt is None or deployment is None or settled(deployment):
                continue
            self._rest.write_status(
                rt, namespace, name, desired_status(deployment, now_rfc3339(self._time()))
            )
