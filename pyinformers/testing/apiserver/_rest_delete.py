"""The delete and deletecollection verbs of the embedded API server.

Owns :meth:`DeleteVerbs.delete`: preconditions (uid, resourceVersion),
propagation policies (the orphan and foreground finalizers), admission, an
object with finalizers only marked for deletion (``deletionTimestamp``, a
namespace's ``Terminating`` phase), a CRD's cleanup, and the answer (a
``Status`` when the object is gone, the object while it is pending: 200, or
202 with the deprecated ``orphanDependents: false``); and
:meth:`DeleteVerbs.delete_collection`.

Invariant: a dry run changes nothing and answers as the real delete would.

Thread-safety: each delete runs under the store lock (released only while
webhooks run, then re-checked); deletecollection holds it for the whole
collection.
"""

from __future__ import annotations

import builtins

from pyinformers.testing.apiserver._crd import CLEANUP_FINALIZER, terminating_status
from pyinformers.testing.apiserver._objects import (
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    PROPAGATION_POLICIES,
    copy_json,
    meta_of,
)
from pyinformers.testing.apiserver._options import ListOptions
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest_core import CRD_STORAGE_KEY, RestCore
from pyinformers.testing.apiserver._rest_reads import matches
from pyinformers.testing.apiserver._status import StatusError, conflict, invalid, success_status

__all__ = ["DeleteVerbs"]


class DeleteVerbs(RestCore):
    """delete and deletecollection."""

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        options: dict,
        *,
        dry_run: bool = False,
        user: str | None = None,
        warnings: builtins.list | None = None,
    ) -> tuple[int, dict]:
        """Delete or mark for deletion; returns (HTTP status, body).

        200 with a ``Status`` when the object is gone; 200 with the object when
        finalizers keep it (202 only with the deprecated ``orphanDependents:
        false``). With ``dry_run`` nothing changes and the answer is the same.
        """
        ns = self._ns(rt, namespace)
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy is not None and policy not in PROPAGATION_POLICIES:
            raise invalid(
                "DeleteOptions",
                "meta.k8s.io",
                name,
                [
                    (
                        "FieldValueNotSupported",
                        "propagationPolicy",
                        f'Unsupported value: {policy!r}: supported values: "Orphan", "Background", "Foreground"',
                    )
                ],
            )
        preconditions = options.get("preconditions") or {}
        with self.store.lock:
            obj = self._get_existing(rt, ns, name)
            meta = obj["metadata"]
            if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                raise conflict(
                    rt.kind,
                    rt.group,
                    name,
                    f"the UID in the precondition ({preconditions['uid']}) does not match the UID in record "
                    f"({meta.get('uid')}). The object might have been deleted and then recreated",
                )
            if preconditions.get("resourceVersion") and preconditions[
                "resourceVersion"
            ] != meta.get("resourceVersion"):
                raise conflict(
                    rt.kind,
                    rt.group,
                    name,
                    f"the ResourceVersion in the precondition ({preconditions['resourceVersion']}) does not match the "
                    f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might have been modified",
                )
            attrs = self._attributes(
                rt,
                "DELETE",
                ns,
                name,
                None,
                dry_run,
                user,
                warnings,
                {k: v for k, v in options.items() if k not in ("kind", "apiVersion")},
            )
            if attrs is not None:
                old_view = self._out(rt, obj)

                def admit() -> None:  # mutating webhooks too: with the old object, nothing to patch
                    self.webhooks.mutate(attrs, None, old_view)
                    self.webhooks.validate(attrs, None, old_view)

                self._unlocked(admit)
                self._still(rt, ns, name, obj)
            # A pending deletion answers 200 with the object; only the deprecated
            # orphanDependents=false makes it 202 Accepted (as on a real server).
            pending_code = 202 if options.get("orphanDependents") is False else 200

            finalizers = list(meta.get("finalizers") or ())
            extra = {"Orphan": ORPHAN_FINALIZER, "Foreground": FOREGROUND_FINALIZER}.get(
                policy or ""
            )
            if extra and extra not in finalizers:
                if (
                    extra == ORPHAN_FINALIZER
                    or self.store.dependents(meta.get("uid", ""))
                    or finalizers
                ):
                    finalizers.append(extra)
            if (
                policy == "Background"
                and ORPHAN_FINALIZER in finalizers
                and not meta.get("deletionTimestamp")
            ):
                finalizers.remove(ORPHAN_FINALIZER)
            pending = finalizers or self._deletion_blocked(rt, obj)
            if dry_run:
                return (
                    (pending_code, self._out(rt, obj))
                    if pending
                    else (200, self._deleted_status(rt, name, obj))
                )
            if rt.storage_key == CRD_STORAGE_KEY and not pending:
                return 200, self._delete_crd(rt, name, obj)
            if not pending:
                final = self._remove(rt, ns, name) or obj
                if rt.storage_key == CRD_STORAGE_KEY:
                    return 200, self._out(rt, final)  # a CRD's DELETE answers the CRD, not a Status
                return 200, self._deleted_status(rt, name, final)
            if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or ()):
                return pending_code, self._out(rt, obj)
            new = dict(obj)
            new_meta = dict(meta, finalizers=finalizers)
            if not finalizers:
                new_meta.pop("finalizers")
            if not meta.get("deletionTimestamp"):
                new_meta["deletionTimestamp"] = self._timestamp()
                if rt.storage_key != "/namespaces":  # a namespace's deletion has no grace period
                    new_meta["deletionGracePeriodSeconds"] = 0
                if meta.get("generation"):
                    new_meta["generation"] = int(meta["generation"]) + 1
            new["metadata"] = new_meta
            if rt.storage_key == "/namespaces":
                new["status"] = dict(obj.get("status") or {}, phase="Terminating")
            stored = self.store.put(rt.storage_key, ns, name, new)
            return pending_code, self._out(rt, stored)

    def _delete_crd(self, rt: ResourceType, name: str, obj: dict) -> dict:
        """A CRD's DELETE: marked with the cleanup finalizer and a Terminating condition (the answer);
        then, as the real cleanup controller does a moment later, its objects go and so does it."""
        marked = copy_json(obj)
        meta = marked["metadata"]
        meta["deletionTimestamp"] = self._timestamp()
        meta["finalizers"] = list(meta.get("finalizers") or []) + [CLEANUP_FINALIZER]
        marked["status"] = terminating_status(marked, self._timestamp())
        stored = self.store.put(rt.storage_key, "", name, marked)
        self._remove(rt, "", name)
        return self._out(rt, stored)

    @staticmethod
    def _deleted_status(rt: ResourceType, name: str, final: dict) -> dict:
        details = {"name": name, "kind": rt.plural, "uid": meta_of(final).get("uid")}
        if rt.group:
            details["group"] = rt.group
        return success_status(details=details)

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, options: ListOptions, delete_options: dict
    ) -> dict:
        """Delete every matching object; returns the List of what was deleted or marked."""
        ns = self._ns(rt, namespace) if namespace else None
        with self.store.lock:
            objects, rv = self.store.snapshot(rt.storage_key, ns)
            deleted = []
            for obj in objects:
                if not matches(obj, options, rt.storage_key):
                    continue
                meta = obj["metadata"]
                try:
                    code, result = self.delete(
                        rt, meta.get("namespace"), meta["name"], delete_options
                    )
                except StatusError as exc:
                    if exc.code == 404:
                        continue
                    raise
                deleted.append(result if result.get("kind") != "Status" else obj)
        # Each item in its last state; the list's resourceVersion is the one it was listed at.
        return self._list_object(rt, {"resourceVersion": str(rv)}, deleted)
