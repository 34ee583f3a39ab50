"""What the in-process API server fills in when an object is created.

Namespaces get the ``kubernetes`` finalizer, phase ``Active`` and the
``kubernetes.io/metadata.name`` label; a CustomResourceDefinition is
installed in the registry (so its resources are served) and gets its status.

Not thread-safe by itself: called under the store lock.
"""

from __future__ import annotations

from pyinformers.testing.objects import NAMESPACE_FINALIZER
from pyinformers.testing.registry import Registry, ResourceType
from pyinformers.testing.status import invalid

__all__ = ["defaults_on_create"]


def defaults_on_create(registry: Registry, rt: ResourceType, obj: dict, timestamp: str) -> None:
    """Fill in what the server sets on create (namespace finalizer and phase, a CRD's status; serves a CRD)."""
    if rt.storage_key == "/namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", [NAMESPACE_FINALIZER])
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif rt.storage_key == "apiextensions.k8s.io/customresourcedefinitions":
        try:
            registry.install_crd(obj)
        except ValueError as exc:
            raise invalid(rt.kind, rt.group, obj["metadata"]["name"], [("FieldValueInvalid", "spec", str(exc))]) from None
        names = dict(obj["spec"].get("names") or {})
        names.setdefault("singular", names.get("kind", "").lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        ts = timestamp
        obj["status"] = {
            "acceptedNames": names,
            "storedVersions": [v["name"] for v in obj["spec"]["versions"] if v.get("storage")] or [obj["spec"]["versions"][0]["name"]],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": ts},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": ts},
            ],
        }

