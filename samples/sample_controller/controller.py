"""The Foo controller: a port of kubernetes/sample-controller's ``controller.go``.

For every ``Foo`` (``samplecontroller.k8s.io/v1alpha1``) the controller makes
sure a Deployment named ``spec.deploymentName`` exists in the Foo's
namespace, is controlled by the Foo, and runs ``spec.replicas`` nginx pods;
it copies the Deployment's ``status.availableReplicas`` into the Foo's
status and records Events about what it did.

The structure follows the Go original, piece for piece:

=====================================  =============================================
controller.go                          here
=====================================  =============================================
``NewController``                      :meth:`FooController.__init__`
``fooInformer...AddEventHandler``      ``self.watch(foos)``
``deploymentInformer...AddEvent...``   ``self.watch(deployments, EnqueueForOwner(...))``
``handleObject``                       :class:`~pyinformers.controller.EnqueueForOwner`
``Run`` / ``runWorker`` /              inherited from :class:`~pyinformers.controller.Controller`
``processNextWorkItem``
``syncHandler``                        :meth:`FooController.reconcile`
``updateFooStatus``                    :meth:`FooController.update_foo_status`
``newDeployment``                      :func:`new_deployment`
=====================================  =============================================

Two deliberate differences, both about writes the Go code leaves to the API
server: the replicas fix sends the cached Deployment's ``resourceVersion``
(an optimistic-concurrency update; a conflict retries with backoff) instead
of an unconditional update, and the status write is skipped when the status
already says the right thing (the Go code writes it every time and relies on
the API server to drop a no-op update).

Threading: ``reconcile`` runs on the controller's worker threads, for
different keys at once; it reads only the informers' caches (never mutating
cached objects) and writes through thread-safe clients.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyinformers.api import Conflict, Resource, meta
from pyinformers.controller import Controller, EnqueueForOwner, Result, resource_version_changed
from pyinformers.record import EventRecorder, EventType
from pyinformers.resources import DEPLOYMENTS
from samples.sample_controller.types import FOO_CRD, Foo

__all__ = [
    "ARTIFACTS",
    "CONTROLLER_AGENT_NAME",
    "ERR_RESOURCE_EXISTS",
    "FOOS",
    "FooController",
    "MESSAGE_RESOURCE_EXISTS",
    "MESSAGE_RESOURCE_SYNCED",
    "ResourceExistsError",
    "SUCCESS_SYNCED",
    "new_deployment",
]

logger = logging.getLogger(__name__)

#: The YAML files of the sample: ``crd.yaml`` and ``example-foo.yaml``.
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"

#: The Foo resource, as ``types.py`` defines it (and ``artifacts/crd.yaml``, generated from it):
#: its lister returns ``Foo`` s to a type checker.
FOOS: Resource[Foo] = FOO_CRD.resource()

#: The component name of the Events this controller records.
CONTROLLER_AGENT_NAME = "sample-controller"
#: Event reason when a Foo was synced.
SUCCESS_SYNCED = "Synced"
#: Event reason when a Foo cannot be synced because a Deployment of that name belongs to someone else.
ERR_RESOURCE_EXISTS = "ErrResourceExists"
#: Event message (``%`` the Deployment name) for :data:`ERR_RESOURCE_EXISTS`.
MESSAGE_RESOURCE_EXISTS = "Resource %r already exists and is not managed by Foo"
#: Event message for :data:`SUCCESS_SYNCED`.
MESSAGE_RESOURCE_SYNCED = "Foo synced successfully"


class ResourceExistsError(Exception):
    """The Deployment a Foo names exists but is not controlled by that Foo.

    Raised from :meth:`FooController.reconcile` (like the Go code returns an
    error), so the key is retried with backoff: the conflict may be resolved
    by a human (deleting or handing over the Deployment).
    """


class FooController(Controller):
    """Keeps one nginx Deployment per Foo, at the Foo's replicas, and reports its availability.

    ``factory`` is the :class:`~pyinformers.cache.SharedInformerFactory` whose
    informers (Foos and Deployments) and clients the controller uses;
    ``recorder`` receives the Events. The factory must be started (and its
    caches synced) before workers run; :class:`~pyinformers.manager.Manager`
    does that, and so does :func:`samples.demo.run_in_process`.
    """

    def __init__(
        self, factory: Any, recorder: EventRecorder, *, workers: int = 2, **options: Any
    ) -> None:
        super().__init__(name="foos", workers=workers, **options)
        self.recorder = recorder
        # clients: the Go code's kubeclientset and sampleclientset, with the writes they make
        # (the RBAC generator reads these declarations; see docs/deploying.rst)
        self.deployments_client = factory.client(DEPLOYMENTS, verbs=("create", "update"))
        self.foos_client = factory.client(FOOS, verbs=(), status_verbs=("update",))
        # informers and listers: one shared cache per resource
        foo_informer = factory.informer(FOOS)
        deployment_informer = factory.informer(DEPLOYMENTS)
        self.foos = foo_informer.lister
        self.deployments = deployment_informer.lister
        # A change to a Foo enqueues that Foo.
        self.watch(foo_informer)
        # A change to a Deployment enqueues the Foo that controls it (handleObject).
        # Periodic resyncs re-deliver unchanged Deployments; like the Go code, skip those.
        self.watch(
            deployment_informer,
            EnqueueForOwner(FOOS.kind, owner_group=FOOS.group),
            predicates=[resource_version_changed],
        )

    def reconcile(self, key: str) -> Result | None:
        """Make the world match Foo ``key`` (the Go ``syncHandler``). Raising means retry."""
        namespace, name = meta.split_key(key)
        foo = self.foos.namespace(namespace).get(name)
        if foo is None:
            # The Foo was deleted; its Deployment goes with it (garbage collection
            # follows the owner reference), so there is nothing left to do.
            logger.info("foo %r in work queue no longer exists", key)
            return None

        deployment_name = (foo.get("spec") or {}).get("deploymentName")
        if not deployment_name:
            # Absorb the error: retrying cannot help until the Foo is edited,
            # and that edit enqueues the Foo again.
            logger.error("%s: deployment name must be specified", key)
            return None

        deployment = self.deployments.namespace(namespace).get(deployment_name)
        if deployment is None:
            deployment = self.deployments_client.create(new_deployment(foo), namespace=namespace)
            logger.info("created deployment %s/%s for foo %s", namespace, deployment_name, key)

        if not meta.is_controlled_by(deployment, foo):
            message = MESSAGE_RESOURCE_EXISTS % deployment_name
            self.recorder.event(foo, EventType.WARNING, ERR_RESOURCE_EXISTS, message)
            raise ResourceExistsError(message)

        replicas = (foo.get("spec") or {}).get("replicas")
        current = (deployment.get("spec") or {}).get("replicas")
        if replicas is not None and replicas != current:
            logger.info("foo %s replicas: %s, deployment replicas: %s", key, replicas, current)
            desired = new_deployment(foo)
            desired["metadata"]["resourceVersion"] = meta.resource_version(deployment)
            deployment = self.deployments_client.replace(desired)

        try:
            self.update_foo_status(foo, deployment)
        except Conflict:
            # Our cached Foo is behind the server (typically our own previous status write has
            # not come back through the watch yet; on a real cluster the Deployment's status moves
            # fast enough to show it): try again, with backoff, from a fresher cache.
            return Result(requeue=True)
        self.recorder.event(foo, EventType.NORMAL, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)
        return None

    def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
        """Copy the Deployment's available replicas into the Foo's status subresource.

        Never mutates ``foo`` (a cached object): works on a deep copy.
        """
        available = int((deployment.get("status") or {}).get("availableReplicas") or 0)
        if (foo.get("status") or {}).get("availableReplicas") == available:
            return
        foo_copy = meta.deep_copy(foo)
        foo_copy.setdefault("status", {})["availableReplicas"] = available
        self.foos_client.replace_status(foo_copy)


def new_deployment(foo: Mapping[str, Any]) -> dict:
    """The Deployment a Foo wants: nginx, ``spec.replicas`` pods, controlled by the Foo."""
    spec = foo.get("spec") or {}
    labels = {"app": "nginx", "controller": meta.name(foo)}
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": spec["deploymentName"], "namespace": meta.namespace(foo)},
        "spec": {
            "replicas": _replicas(spec.get("replicas")),
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
            },
        },
    }
    meta.set_controller_reference(foo, deployment)
    return deployment


def _replicas(value: int | None) -> int:
    # Go's *int32 left nil lets the API server default it to 1; say so explicitly.
    return 1 if value is None else int(value)
