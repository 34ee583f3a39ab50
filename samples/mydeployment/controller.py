"""MyDeployment: an operator that owns a Deployment and a Service and heals them.

A ``MyDeployment`` (``demo.pyinformers.dev/v1alpha1``) says *run this image,
this many replicas, serving this port*. The controller keeps, in the same
namespace and under the same name:

* a Deployment running ``spec.image`` with ``spec.replicas`` replicas, its
  container listening on ``spec.port``;
* a ClusterIP Service exposing ``spec.port`` and selecting those pods;
* ``status.observedGeneration``, ``status.availableReplicas`` and a ``Ready``
  condition (with a reason and a message) on the MyDeployment.

Both children carry a controller reference to the MyDeployment, so the API
server's garbage collector deletes them with it, and a change to either one
enqueues the owner (:class:`~pyinformers.controller.EnqueueForOwner`). If
someone scales the Deployment, swaps its image, edits the labels the
controller manages, changes the Service's selector or ports, or deletes
either child, the next reconcile puts it back. Labels and annotations the
controller does not manage are left alone (other tools add their own).

**No reconcile storms.** Every write the controller makes comes back to it
as a watch event. It stays quiet because:

1. it compares desired with actual state and writes only what differs, so
   the reconcile caused by its own write finds nothing to do and writes
   nothing (the loop ends after one extra, read-only reconcile);
2. the MyDeployment is watched with ``generation_changed``: writing its
   status (the status subresource never bumps ``metadata.generation``) does
   not enqueue it again;
3. the status is written only when it changed, and ``lastTransitionTime``
   moves only when the condition's status does.

Threading: ``reconcile`` runs on worker threads (different keys at once) and
never mutates cached objects; the reconcile counter has its own lock.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyinformers.api import Conflict, Resource, meta
from pyinformers.controller import (
    Controller,
    EnqueueForOwner,
    Result,
    generation_changed,
    resource_version_changed,
)
from pyinformers.record import EventRecorder, EventType
from pyinformers.resources import DEPLOYMENTS, SERVICES
from samples.mydeployment.types import MYDEPLOYMENT_CRD, MyDeployment

__all__ = [
    "ARTIFACTS",
    "COMPONENT",
    "MYDEPLOYMENTS",
    "MyDeploymentController",
    "desired_deployment",
    "desired_service",
]

logger = logging.getLogger(__name__)

#: The YAML files of the sample: ``crd.yaml`` and ``example.yaml``.
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
#: The MyDeployment resource, as ``types.py`` defines it (and ``artifacts/crd.yaml``, generated
#: from it): its lister returns ``MyDeployment`` s to a type checker.
MYDEPLOYMENTS: Resource[MyDeployment] = MYDEPLOYMENT_CRD.resource()
#: Source component of the Events this controller records.
COMPONENT = "mydeployment-controller"
#: The label every child carries, naming its MyDeployment (also the pod selector).
INSTANCE_LABEL = "app.kubernetes.io/instance"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"

DEFAULT_REPLICAS = 1
DEFAULT_PORT = 80


class MyDeploymentController(Controller):
    """Reconciles MyDeployments: their Deployment, their Service and their status.

    ``reconciles`` counts reconciles per key (tests use it to show that one
    change costs a bounded number of reconciles).
    """

    def __init__(
        self, factory: Any, recorder: EventRecorder, *, workers: int = 2, **options: Any
    ) -> None:
        super().__init__(name="mydeployments", workers=workers, **options)
        self.recorder = recorder
        # The writes each client makes (the RBAC generator reads these; see docs/deploying.rst).
        self.owners_client = factory.client(MYDEPLOYMENTS, verbs=(), status_verbs=("update",))
        # The Deployment is written by server-side apply, as kubebuilder's scaffolds do: the
        # desired fields only, under the controller's name (the field manager), taking them
        # back with force from whoever changed them.
        self.deployments_client = self.client(factory, DEPLOYMENTS, verbs=("apply",))
        self.services_client = factory.client(SERVICES, verbs=("create", "update"))
        owners = factory.informer(MYDEPLOYMENTS)
        deployments = factory.informer(DEPLOYMENTS)
        services = factory.informer(SERVICES)
        self.owners = owners.lister
        self.deployments = deployments.lister
        self.services = services.lister
        # Spec changes only: our own status writes do not bump the generation.
        self.watch(owners, predicates=[generation_changed])
        # Any real change to a child (drift, deletion, status progress) wakes its owner;
        # resyncs (same resourceVersion) do not.
        for informer in (deployments, services):
            self.watch(
                informer,
                EnqueueForOwner(MYDEPLOYMENTS.kind, owner_group=MYDEPLOYMENTS.group),
                predicates=[resource_version_changed],
            )
        self._count_lock = threading.Lock()
        self._reconciles: collections.Counter[str] = collections.Counter()

    def reconciles(self, key: str | None = None) -> int:
        """How many reconciles ran for ``key`` (all keys when None)."""
        with self._count_lock:
            return self._reconciles[key] if key is not None else sum(self._reconciles.values())

    # -- reconcile --------------------------------------------------------------------
    def reconcile(self, key: str) -> Result | None:
        with self._count_lock:
            self._reconciles[key] += 1
        namespace, name = meta.split_key(key)
        owner = self.owners.namespace(namespace).get(name)
        if owner is None:
            return None  # deleted; the garbage collector removes the children
        if (owner.get("metadata") or {}).get("deletionTimestamp"):
            return None  # being deleted: do not recreate what is going away

        problem = _spec_problem(owner)
        if problem is not None:
            # Retrying cannot fix a spec; the next edit of it enqueues the owner again.
            self._update_status(owner, None, ("InvalidSpec", problem))
            return None
        deployment, blocked_by = self._ensure_deployment(owner)
        if blocked_by is None:
            blocked_by = self._ensure_service(owner)
        try:
            self._update_status(owner, deployment, blocked_by)
        except Conflict:
            # The cached owner is behind the server (our previous status write not yet seen):
            # try again, with backoff, from a fresher cache.
            return Result(requeue=True)
        return None

    def _ensure_deployment(
        self, owner: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any] | None, tuple[str, str] | None]:
        """Create or repair the Deployment; return it and, when it belongs to someone else, (reason, message)."""
        namespace, name = meta.namespace(owner), meta.name(owner)
        desired = desired_deployment(owner)
        actual = self.deployments.namespace(namespace).get(name)
        if actual is None:
            created = self.deployments_client.apply(desired, force=True)
            self.recorder.eventf(owner, EventType.NORMAL, "Created", "Created Deployment %s", name)
            return created, None
        if not meta.is_controlled_by(actual, owner):
            return actual, self._not_ours(owner, "Deployment", name)
        if _repair_deployment(actual, desired) is None:
            return actual, None  # nothing we manage drifted: no request at all
        # Applying the desired fields reverts exactly the drift the check found (labels by key,
        # the container by name, its ports by port and protocol); other fields stay whoever's.
        updated = self.deployments_client.apply(desired, force=True)
        self.recorder.eventf(
            owner, EventType.NORMAL, "Repaired", "Reverted drift of Deployment %s", name
        )
        return updated, None

    def _ensure_service(self, owner: Mapping[str, Any]) -> tuple[str, str] | None:
        namespace, name = meta.namespace(owner), meta.name(owner)
        desired = desired_service(owner)
        actual = self.services.namespace(namespace).get(name)
        if actual is None:
            self.services_client.create(desired, namespace=namespace)
            self.recorder.eventf(owner, EventType.NORMAL, "Created", "Created Service %s", name)
            return None
        if not meta.is_controlled_by(actual, owner):
            return self._not_ours(owner, "Service", name)
        repaired = _repair_service(actual, desired)
        if repaired is not None:
            self.services_client.replace(repaired)
            self.recorder.eventf(
                owner, EventType.NORMAL, "Repaired", "Reverted drift of Service %s", name
            )
        return None

    def _not_ours(self, owner: Mapping[str, Any], kind: str, name: str) -> tuple[str, str]:
        message = f"{kind} {name!r} already exists and is not managed by this MyDeployment"
        self.recorder.event(owner, EventType.WARNING, "ResourceExists", message)
        return "ResourceExists", message

    def _update_status(
        self,
        owner: Mapping[str, Any],
        deployment: Mapping[str, Any] | None,
        blocked_by: tuple[str, str] | None,
    ) -> None:
        """Write observedGeneration, availableReplicas and the Ready condition, if any of them changed.

        ``blocked_by`` is ``(reason, message)`` when the children could not be
        made to match the spec (Ready is then False for that reason).
        """
        spec = owner.get("spec") or {}
        wanted = _int(spec.get("replicas"), DEFAULT_REPLICAS)
        available = int(((deployment or {}).get("status") or {}).get("availableReplicas") or 0)
        if blocked_by is not None:
            ready, (reason, message) = "False", blocked_by
        elif available >= wanted and _rolled_out(deployment):
            ready, reason, message = "True", "Available", f"{available}/{wanted} replicas available"
        else:
            ready, reason, message = (
                "False",
                "Progressing",
                f"{available}/{wanted} replicas available",
            )
        generation = (owner.get("metadata") or {}).get("generation")
        status = dict(owner.get("status") or {})
        old_conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        old_ready = next((c for c in old_conditions if c.get("type") == "Ready"), None)
        condition = {
            "type": "Ready",
            "status": ready,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": (
                old_ready["lastTransitionTime"]
                if old_ready
                and old_ready.get("status") == ready
                and old_ready.get("lastTransitionTime")
                else _now()
            ),
        }
        new_status = {
            **status,
            "observedGeneration": generation,
            "availableReplicas": available,
            "conditions": [c for c in old_conditions if c.get("type") != "Ready"] + [condition],
        }
        if new_status == (owner.get("status") or {}):
            return
        updated = meta.deep_copy(owner)
        updated["status"] = new_status
        self.owners_client.replace_status(updated)
        if (
            old_ready is None
            or old_ready.get("status") != ready
            or old_ready.get("reason") != reason
        ):
            event_type = (
                EventType.NORMAL
                if ready == "True" or reason == "Progressing"
                else EventType.WARNING
            )
            self.recorder.event(owner, event_type, "Ready" if ready == "True" else reason, message)


def _rolled_out(deployment: Mapping[str, Any] | None) -> bool:
    """True when the Deployment runs only its current template, all of it available (``kubectl rollout status``).

    Counting available replicas alone is not enough: in the middle of a rolling update the old
    Pods are still available (a real cluster showed 4/3 right after an image change).
    """
    if deployment is None:
        return False
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    want = _int(spec.get("replicas"), 1)
    updated = int(status.get("updatedReplicas") or 0)
    return (
        int(status.get("observedGeneration") or 0)
        >= int((deployment.get("metadata") or {}).get("generation") or 0)
        and updated >= want
        and int(status.get("replicas") or 0) == updated
        and int(status.get("availableReplicas") or 0) >= updated
    )


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _spec_problem(owner: Mapping[str, Any]) -> str | None:
    """Why the spec cannot be acted on, or None. (The CRD's schema says the same to a real API server.)"""
    spec = owner.get("spec")
    if not isinstance(spec, Mapping):
        return "spec is missing"
    if not isinstance(spec.get("image"), str) or not spec["image"]:
        return "spec.image is required"
    replicas, port = spec.get("replicas", DEFAULT_REPLICAS), spec.get("port", DEFAULT_PORT)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        return f"spec.replicas must be an integer >= 0, got {replicas!r}"
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        return f"spec.port must be an integer from 1 to 65535, got {port!r}"
    return None


# -- desired state ----------------------------------------------------------------------
def _labels(owner: Mapping[str, Any]) -> dict[str, str]:
    return {INSTANCE_LABEL: meta.name(owner) or "", MANAGED_BY_LABEL: COMPONENT}


def desired_deployment(owner: Mapping[str, Any]) -> dict:
    """The Deployment a MyDeployment wants (with its controller reference)."""
    spec = owner.get("spec") or {}
    labels = _labels(owner)
    port = _int(spec.get("port"), DEFAULT_PORT)
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": meta.name(owner),
            "namespace": meta.namespace(owner),
            "labels": dict(labels),
        },
        "spec": {
            "replicas": _int(spec.get("replicas"), DEFAULT_REPLICAS),
            "selector": {"matchLabels": {INSTANCE_LABEL: labels[INSTANCE_LABEL]}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": spec["image"],
                            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
                        }
                    ]
                },
            },
        },
    }
    meta.set_controller_reference(owner, deployment)
    return deployment


def desired_service(owner: Mapping[str, Any]) -> dict:
    """The Service a MyDeployment wants (with its controller reference)."""
    spec = owner.get("spec") or {}
    port = _int(spec.get("port"), DEFAULT_PORT)
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": meta.name(owner),
            "namespace": meta.namespace(owner),
            "labels": _labels(owner),
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {INSTANCE_LABEL: meta.name(owner) or ""},
            "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }
    meta.set_controller_reference(owner, service)
    return service


# -- drift: compare only what we manage; return a repaired copy or None -----------------
def _merge_labels(actual: Mapping[str, str] | None, desired: Mapping[str, str]) -> dict | None:
    """``actual`` with ``desired`` labels enforced, or None when nothing differs."""
    actual = dict(actual or {})
    if all(actual.get(k) == v for k, v in desired.items()):
        return None
    actual.update(desired)
    return actual


def _repair_deployment(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> dict | None:
    """A copy of ``actual`` with the managed fields of ``desired``, or None when none drifted."""
    repaired = meta.deep_copy(actual)
    changed = False
    labels = _merge_labels(meta.labels(actual), desired["metadata"]["labels"])
    if labels is not None:
        repaired["metadata"]["labels"] = labels
        changed = True
    spec, want = repaired.setdefault("spec", {}), desired["spec"]
    if spec.get("replicas") != want["replicas"]:
        spec["replicas"] = want["replicas"]
        changed = True
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    labels = _merge_labels(template_meta.get("labels"), want["template"]["metadata"]["labels"])
    if labels is not None:
        template_meta["labels"] = labels
        changed = True
    pod_spec = template.setdefault("spec", {})
    want_container = want["template"]["spec"]["containers"][0]
    containers = pod_spec.get("containers") or []
    container = next((c for c in containers if c.get("name") == want_container["name"]), None)
    if container is None:
        pod_spec["containers"] = [meta.deep_copy(want_container)] + [dict(c) for c in containers]
        changed = True
    else:
        if container.get("image") != want_container["image"]:
            container["image"] = want_container["image"]
            changed = True
        have_ports = [
            (p.get("containerPort"), p.get("protocol", "TCP")) for p in container.get("ports") or []
        ]
        want_ports = [(p["containerPort"], p["protocol"]) for p in want_container["ports"]]
        if have_ports != want_ports:
            container["ports"] = meta.deep_copy(want_container["ports"])
            changed = True
    return repaired if changed else None


def _repair_service(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> dict | None:
    """A copy of ``actual`` with the managed fields of ``desired``, or None when none drifted.

    Server-filled fields (``clusterIP``, ``nodePort`` ...) are kept, since the
    copy starts from the stored object.
    """
    repaired = meta.deep_copy(actual)
    changed = False
    labels = _merge_labels(meta.labels(actual), desired["metadata"]["labels"])
    if labels is not None:
        repaired["metadata"]["labels"] = labels
        changed = True
    spec, want = repaired.setdefault("spec", {}), desired["spec"]
    if spec.get("selector") != want["selector"]:
        spec["selector"] = dict(want["selector"])
        changed = True

    def managed(ports: Any) -> list[tuple]:
        return [
            (
                p.get("name"),
                p.get("port"),
                p.get("targetPort", p.get("port")),
                p.get("protocol", "TCP"),
            )
            for p in ports or []
        ]

    if managed(spec.get("ports")) != managed(want["ports"]):
        spec["ports"] = meta.deep_copy(want["ports"])
        changed = True
    return repaired if changed else None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
