"""The catalog of built-in resources: ``PODS``, ``DEPLOYMENTS``, ``LEASES`` ...

Each name is a :class:`pyinformers.api.Resource`; pass one to an informer
factory, a :class:`~pyinformers.api.ResourceClient` or a controller. Custom
resources come from :meth:`Resource.from_crd`. :func:`by_kind` looks a
built-in up by ``apiVersion`` and ``kind`` (as found on an object or an owner
reference).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyinformers.api._resource import Resource

if TYPE_CHECKING:  # the typed views cost nothing at run time: only type checkers read them
    from pyinformers import k8s

__all__ = [
    # core/v1
    "PODS",
    "SERVICES",
    "ENDPOINTS",
    "CONFIGMAPS",
    "SECRETS",
    "NAMESPACES",
    "NODES",
    "EVENTS",
    "SERVICE_ACCOUNTS",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    # apps/v1
    "DEPLOYMENTS",
    "REPLICASETS",
    "STATEFULSETS",
    "DAEMONSETS",
    # batch/v1
    "JOBS",
    "CRON_JOBS",
    # coordination.k8s.io/v1
    "LEASES",
    # events.k8s.io/v1
    "EVENTS_V1",
    # apiextensions.k8s.io/v1
    "CUSTOM_RESOURCE_DEFINITIONS",
    "ALL",
    "by_kind",
]

PODS: Resource[k8s.Pod] = Resource("", "v1", "pods", "Pod")
SERVICES: Resource[k8s.Service] = Resource("", "v1", "services", "Service")
ENDPOINTS: Resource[k8s.Endpoints] = Resource("", "v1", "endpoints", "Endpoints")
CONFIGMAPS: Resource[k8s.ConfigMap] = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS: Resource[k8s.Secret] = Resource("", "v1", "secrets", "Secret")
NAMESPACES: Resource[k8s.Namespace] = Resource(
    "", "v1", "namespaces", "Namespace", namespaced=False
)
NODES: Resource[k8s.Node] = Resource("", "v1", "nodes", "Node", namespaced=False)
EVENTS: Resource[k8s.Event] = Resource("", "v1", "events", "Event")
SERVICE_ACCOUNTS: Resource[k8s.ServiceAccount] = Resource(
    "", "v1", "serviceaccounts", "ServiceAccount"
)
PERSISTENT_VOLUMES: Resource[k8s.PersistentVolume] = Resource(
    "", "v1", "persistentvolumes", "PersistentVolume", namespaced=False
)
PERSISTENT_VOLUME_CLAIMS: Resource[k8s.PersistentVolumeClaim] = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"
)

DEPLOYMENTS: Resource[k8s.Deployment] = Resource("apps", "v1", "deployments", "Deployment")
REPLICASETS: Resource[k8s.ReplicaSet] = Resource("apps", "v1", "replicasets", "ReplicaSet")
STATEFULSETS: Resource[k8s.StatefulSet] = Resource("apps", "v1", "statefulsets", "StatefulSet")
DAEMONSETS: Resource[k8s.DaemonSet] = Resource("apps", "v1", "daemonsets", "DaemonSet")

JOBS: Resource[k8s.Job] = Resource("batch", "v1", "jobs", "Job")
CRON_JOBS: Resource[k8s.CronJob] = Resource("batch", "v1", "cronjobs", "CronJob")

LEASES: Resource[k8s.Lease] = Resource("coordination.k8s.io", "v1", "leases", "Lease")

EVENTS_V1: Resource[k8s.EventsV1Event] = Resource("events.k8s.io", "v1", "events", "Event")

CUSTOM_RESOURCE_DEFINITIONS: Resource[k8s.CustomResourceDefinition] = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)

#: Every built-in above, in catalog order.
ALL: tuple[Resource[Any], ...] = (
    PODS,
    SERVICES,
    ENDPOINTS,
    CONFIGMAPS,
    SECRETS,
    NAMESPACES,
    NODES,
    EVENTS,
    SERVICE_ACCOUNTS,
    PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS,
    DEPLOYMENTS,
    REPLICASETS,
    STATEFULSETS,
    DAEMONSETS,
    JOBS,
    CRON_JOBS,
    LEASES,
    EVENTS_V1,
    CUSTOM_RESOURCE_DEFINITIONS,
)

_BY_KIND = {(r.api_version, r.kind): r for r in ALL}


def by_kind(api_version: str, kind: str) -> Resource[Any] | None:
    """The built-in resource for ``apiVersion``/``kind`` (``("apps/v1", "Deployment")``), or None."""
    return _BY_KIND.get((api_version, kind))
