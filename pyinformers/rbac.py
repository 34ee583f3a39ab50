"""RBAC from what a controller declares: rules, Roles, ClusterRoles and their bindings, as stable YAML.

Input is a list of :class:`~pyinformers.api._permissions.Grant` (a verb on a
resource, cluster-wide or in one namespace), as a
:class:`~pyinformers.cache.SharedInformerFactory` records them and
:class:`pyinformers.manager._operator.Operator` completes them (Events for the recorder,
Leases for leader election, TokenReviews and SubjectAccessReviews for the
metrics filter). Output:

* one ClusterRole and ClusterRoleBinding for the cluster-wide grants (an
  operator watching every namespace, or any cluster-scoped resource);
* one Role and RoleBinding per namespace for the namespaced grants (an
  operator restricted with ``--namespace``, and the leader-election Lease).

Rules are merged the way a reader wants them: within an API group, resources
that need the same verbs share one rule; rules, resources and verbs are
sorted, so the same controller always yields byte-identical YAML that can be
checked in and compared (``tests/manager/test_rbac.py`` fails when a sample's
checked-in RBAC drifts).

Pure functions; no I/O except :func:`dump` producing a string.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import yaml

from pyinformers.api._permissions import Grant

__all__ = ["dump", "manifests", "rules"]

_RBAC = "rbac.authorization.k8s.io/v1"


def rules(grants: Iterable[Grant]) -> dict[str | None, list[dict]]:
    """``{namespace or None: [PolicyRule, ...]}``: the grants merged and sorted."""
    verbs: dict[tuple[str | None, str, str], set[str]] = defaultdict(set)
    for grant in grants:
        verbs[(grant.namespace, grant.group, grant.resource)].add(grant.verb)
    # (namespace, group, verbs) -> resources
    merged: dict[tuple[str | None, str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (namespace, group, resource), vs in verbs.items():
        merged[(namespace, group, tuple(sorted(vs)))].append(resource)
    out: dict[str | None, list[dict]] = defaultdict(list)
    for (namespace, group, verb_list), resources in merged.items():
        out[namespace].append(
            {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verb_list)}
        )
    for namespace in out:
        out[namespace].sort(key=lambda r: (r["apiGroups"], r["resources"], r["verbs"]))
    return dict(out)


def manifests(
    grants: Iterable[Grant],
    *,
    name: str,
    service_account: str,
    service_account_namespace: str,
    labels: dict | None = None,
) -> list[dict]:
    """The Roles/ClusterRole named ``name`` and their bindings to the ServiceAccount.

    The ClusterRole (if any) comes first, then one Role per namespace in
    name order, each followed by its binding.
    """
    by_namespace = rules(grants)
    subject = {
        "kind": "ServiceAccount",
        "name": service_account,
        "namespace": service_account_namespace,
    }
    out: list[dict] = []
    for namespace in sorted(by_namespace, key=lambda ns: (ns is not None, ns or "")):
        role_kind = "ClusterRole" if namespace is None else "Role"
        metadata: dict = {"name": name}
        if namespace is not None:
            metadata["namespace"] = namespace
        if labels:
            metadata["labels"] = dict(sorted(labels.items()))
        out.append(
            {
                "apiVersion": _RBAC,
                "kind": role_kind,
                "metadata": dict(metadata),
                "rules": by_namespace[namespace],
            }
        )
        out.append(
            {
                "apiVersion": _RBAC,
                "kind": f"{role_kind}Binding",
                "metadata": dict(metadata),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": role_kind,
                    "name": name,
                },
                "subjects": [dict(subject)],
            }
        )
    return out


def dump(documents: Iterable[dict], *, header: str = "") -> str:
    """YAML documents separated by ``---``, keys in the order built, after ``header`` comment lines."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    body = "---\n".join(
        yaml.safe_dump(doc, sort_keys=False, default_flow_style=False) for doc in documents
    )
    return "\n".join(lines) + ("\n" if lines else "") + body
