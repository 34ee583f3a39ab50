"""The ``/scale`` subresource of the in-process API server (autoscaling/v1 ``Scale``).

Deployments, ReplicaSets and StatefulSets serve ``.../<name>/scale``: GET
answers a ``Scale`` built from the object (``spec.replicas``,
``status.replicas`` and the label selector as a string), PUT and PATCH
change only ``spec.replicas`` of the object, honouring a resourceVersion in
the ``Scale``'s metadata (409 when stale), as ``kubectl scale`` and the
HorizontalPodAutoscaler use it.

Pure functions over plain dicts; thread-safe.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCALABLE", "scale_of", "replicas_from_scale"]

#: storage keys of the resources with a scale subresource
SCALABLE = frozenset({"apps/deployments", "apps/replicasets", "apps/statefulsets"})


def _selector_string(selector: Any) -> str:
    """A LabelSelector as the string ``kubectl`` and the Scale's status use."""
    if not isinstance(selector, dict):
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, dict):
            continue
        key, op, values = expr.get("key"), expr.get("operator"), sorted(expr.get("values") or ())
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def scale_of(obj: dict) -> dict:
    """The autoscaling/v1 ``Scale`` of a scalable object."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    replicas = spec.get("replicas")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas} if replicas else {},
        "status": {
            "replicas": int(status.get("replicas") or 0),
            "selector": _selector_string(spec.get("selector")),
        },
    }


def replicas_from_scale(scale: dict) -> int:
    """``spec.replicas`` of a Scale (0 when absent, as Go's omitempty reads it); ValueError when not an integer."""
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise ValueError(replicas)
    return replicas
