"""ServiceAccount credentials holding exactly the RBAC rules a test grants.

:func:`client_for_service_account` makes (idempotently) a namespace, a
ServiceAccount, a Role + RoleBinding for namespaced rules and a ClusterRole +
ClusterRoleBinding for cluster-wide rules, then asks the TokenRequest API
for a token. It needs an admin ``ApiClient`` of a server that authorizes with
RBAC (a :class:`~pyinformers.testing.envtest.ControlPlane`); the
embedded server has no authorization, so a token there proves nothing.

The Role and ClusterRole are named ``pyinformers-sa-<name>`` and are
*replaced* on every call: the rules of the last call are the ones held.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyinformers.api import ResourceClient
from pyinformers.api._errors import Conflict
from pyinformers.api._resource import Resource
from pyinformers.resources import NAMESPACES, SERVICE_ACCOUNTS

__all__ = ["client_for_service_account", "role_name"]

_ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
_CLUSTER_ROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
)
_CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)


def role_name(namespace: str, name: str, *, cluster: bool) -> str:
    """The name of the (Cluster)Role and binding made for ServiceAccount ``namespace/name``."""
    return f"pyinformers-sa-{namespace}-{name}" if cluster else f"pyinformers-sa-{name}"


def _apply(client: ResourceClient[Any], obj: dict) -> None:
    """Create ``obj``, or replace the live one's content (keeping its resourceVersion)."""
    try:
        client.create(obj)
    except Conflict:
        live = client.get(obj["metadata"]["name"], obj["metadata"].get("namespace"))
        merged = {**live, **{k: v for k, v in obj.items() if k != "metadata"}}
        client.replace(merged)


def _ensure(client: ResourceClient[Any], obj: dict) -> None:
    try:
        client.create(obj)
    except Conflict:
        pass


def client_for_service_account(
    admin: Any,
    namespace: str,
    name: str,
    *,
    rules: Iterable[Mapping[str, Any]] = (),
    cluster_rules: Iterable[Mapping[str, Any]] = (),
    expiration_seconds: int = 3600,
) -> str:
    """Grant ``rules`` (in ``namespace``) and ``cluster_rules`` to ServiceAccount ``namespace/name``; return a token for it."""
    rules = [dict(r) for r in rules]
    cluster_rules = [dict(r) for r in cluster_rules]
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    _ensure(
        ResourceClient(admin, NAMESPACES),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    _ensure(
        ResourceClient(admin, SERVICE_ACCOUNTS),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        },
    )
    if rules:
        role = role_name(namespace, name, cluster=False)
        _apply(
            ResourceClient(admin, _ROLES),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": role, "namespace": namespace},
                "rules": rules,
            },
        )
        _apply(
            ResourceClient(admin, _ROLE_BINDINGS),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": role, "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
                "subjects": subject,
            },
        )
    if cluster_rules:
        role = role_name(namespace, name, cluster=True)
        _apply(
            ResourceClient(admin, _CLUSTER_ROLES),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": role},
                "rules": cluster_rules,
            },
        )
        _apply(
            ResourceClient(admin, _CLUSTER_ROLE_BINDINGS),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": subject,
            },
        )
    from kubernetes import client as k8s

    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": expiration_seconds},
    }
    answer = k8s.CoreV1Api(admin).create_namespaced_service_account_token(name, namespace, request)
    return answer.status.token
