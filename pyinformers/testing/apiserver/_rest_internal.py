"""The embedded API server's own writes, outside the HTTP verbs.

Owns what the server's background writers call (the garbage collector, the
workload simulator, the server itself at start): the apiserver identity
Lease, replacing an object's ``.spec`` or ``.status``, setting owner
references, and dropping a finalizer (which finishes a pending deletion).

Invariants: apart from the Lease's first write (a create), these writes go
to the store directly, without admission or validation; a write to an
object that is gone does nothing; ``.spec`` and ``.status`` are written only
when they differ.

Thread-safety: each write holds the store lock.
"""

from __future__ import annotations

import builtins

from pyinformers.testing.apiserver._objects import meta_of, now_rfc3339
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest_create import CreateVerb

__all__ = ["InternalWrites"]


class InternalWrites(CreateVerb):
    """The server's own writes (its Lease through create)."""

    def record_apiserver_lease(self, rt: ResourceType, epoch: float) -> None:
        """Write the API server's identity Lease in kube-system (what a starting kube-apiserver does)."""
        name = "apiserver-pyinformers-testing"
        renew = now_rfc3339(epoch).replace("Z", ".000000Z")
        spec = {"holderIdentity": name, "leaseDurationSeconds": 3600, "renewTime": renew}
        body = {
            "metadata": {
                "name": name,
                "labels": {"apiserver.kubernetes.io/identity": "kube-apiserver"},
            },
            "spec": spec,
        }
        with self.store.lock:
            if self.store.get("/namespaces", "", "kube-system") is None:
                return
            existing = self.store.get(rt.storage_key, "kube-system", name)
            if existing is None:
                self.create(rt, "kube-system", body)
            else:
                self.write_spec(rt, "kube-system", name, spec)

    def write_spec(self, rt: ResourceType, ns: str, name: str, spec: dict) -> None:
        """Replace ``.spec`` of a stored object (server-internal writers)."""
        with self.store.lock:
            obj = self.store.get(rt.storage_key, ns, name)
            if obj is not None and obj.get("spec") != spec:
                self.store.put(
                    rt.storage_key, ns, name, dict(obj, spec=spec, metadata=dict(obj["metadata"]))
                )

    def remove_finalizer(
        self, rt: ResourceType, ns: str, name: str, finalizer: str, *, spec: bool = False
    ) -> None:
        """Drop one finalizer (from ``metadata`` or, for namespaces, ``spec``); finishes a pending deletion."""
        with self.store.lock:
            obj = self.store.get(rt.storage_key, ns, name)
            if obj is None:
                return
            if spec:
                current = list((obj.get("spec") or {}).get("finalizers") or ())
            else:
                current = list(meta_of(obj).get("finalizers") or ())
            if finalizer not in current:
                return
            current.remove(finalizer)
            new = dict(obj)
            if spec:
                new["spec"] = dict(obj.get("spec") or {}, finalizers=current)
                new["metadata"] = dict(obj["metadata"])
            else:
                new["metadata"] = dict(obj["metadata"], finalizers=current)
                if not current:
                    new["metadata"].pop("finalizers")
            if meta_of(obj).get("deletionTimestamp") and not self._deletion_blocked(rt, new):
                self._remove(rt, ns, name)  # the last finalizer: watchers see only DELETED
                return
            stored = self.store.put(rt.storage_key, ns, name, new)
            self._maybe_finish_deletion(rt, ns, name, stored)

    def set_owner_references(
        self, rt: ResourceType, ns: str, name: str, refs: builtins.list[dict]
    ) -> None:
        with self.store.lock:
            obj = self.store.get(rt.storage_key, ns, name)
            if obj is None:
                return
            new = dict(obj)
            new["metadata"] = dict(obj["metadata"], ownerReferences=refs)
            if not refs:
                new["metadata"].pop("ownerReferences")
            self.store.put(rt.storage_key, ns, name, new)

    def write_status(self, rt: ResourceType, ns: str, name: str, status: dict) -> bool:
        """Replace ``.status`` if it differs (used by the workload simulator); False if the object is gone."""
        with self.store.lock:
            obj = self.store.get(rt.storage_key, ns, name)
            if obj is None:
                return False
            if obj.get("status") != status:
                self.store.put(
                    rt.storage_key,
                    ns,
                    name,
                    dict(obj, status=status, metadata=dict(obj["metadata"])),
                )
            return True
