"""Garbage collection and finalizer processing for the in-process API server.

Plays the part of kube-controller-manager's garbage collector and namespace
controller, asynchronously like them (tests wait for the outcome):

* when an object is deleted, its dependents (objects whose
  ``metadata.ownerReferences`` name its uid) are deleted in the background --
  unless another owner of theirs still exists, in which case only the dangling
  reference is removed;
* an object created with owner references none of whose owners exists is
  deleted in the background (a controller recreating a child of an owner
  that was just deleted);
* an owner deleted with ``propagationPolicy=Orphan`` carries the ``orphan``
  finalizer: the collector removes the owner's references from its dependents,
  then the finalizer, and the owner goes away with its dependents left alone;
* an owner deleted with ``propagationPolicy=Foreground`` carries the
  ``foregroundDeletion`` finalizer: the collector deletes its dependents and
  removes the finalizer once none is left;
* a namespace marked for deletion loses all its contents, then its
  ``kubernetes`` finalizer, then goes away.

The collector listens to the store (quickly, under the store lock: it only
queues work) and does the work on its own daemon thread,
``pyinformers-apiserver-gc``, through the REST layer, so every write it makes
is a normal write with a resourceVersion and watch events.
"""

from __future__ import annotations

from collections import deque

from pyinformers.testing.apiserver._background import StoreListenerThread
from pyinformers.testing.apiserver._objects import (
    FOREGROUND_FINALIZER,
    NAMESPACE_FINALIZER,
    ORPHAN_FINALIZER,
)
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest import RestApi
from pyinformers.testing.apiserver._status import StatusError
from pyinformers.testing.apiserver._storage import Change, ChangeType

__all__ = ["GarbageCollector"]


class GarbageCollector(StoreListenerThread):
    """Background deletion of dependents, orphaning, foreground deletion, namespace cleanup."""

    def __init__(self, rest: RestApi) -> None:
        self._work: deque[Change] = deque()  # changes still to look at, in rv order
        self._busy = False
        super().__init__(rest, thread_name="pyinformers-apiserver-gc")

    def __repr__(self) -> str:
        return f"<GarbageCollector pending={len(self._work)} running={self._thread is not None and self._thread.is_alive()}>"

    def _on_change(self, change: Change) -> None:
        meta = change.obj.get("metadata") or {}
        if (
            change.type is ChangeType.DELETED
            or meta.get("deletionTimestamp")
            or (change.type is ChangeType.ADDED and meta.get("ownerReferences"))
        ):
            with self._cond:
                self._work.append(change)
                self._cond.notify()

    def idle(self) -> bool:
        """True when no work is queued or in progress (for tests that wait for the collector)."""
        with self._cond:
            return not self._work and not self._busy

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._work and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                change = self._work.popleft()
                self._busy = True
            try:
                self._process(change)
            except StatusError:
                pass  # a concurrent client write won the race; the next change re-triggers the work
            finally:
                with self._cond:
                    self._busy = False

    # -- the rules ---------------------------------------------------------------------------

    def _type(self, storage_key: str) -> ResourceType | None:
        types = self._rest.registry.types_for_storage_key(storage_key)
        return types[0] if types else None

    def _process(self, change: Change) -> None:
        meta = change.obj.get("metadata") or {}
        uid = meta.get("uid", "")
        if change.type is ChangeType.ADDED and not meta.get("deletionTimestamp"):
            self._collect_if_dangling(change)
            return
        if change.type is ChangeType.DELETED:
            self._collect_dependents(uid)
            self._recheck_owners(change.obj)
            if change.namespace:
                self._recheck_namespace(change.namespace)
            return
        finalizers = meta.get("finalizers") or ()
        rt = self._type(change.storage_key)
        if rt is None:
            return
        if ORPHAN_FINALIZER in finalizers:
            for (key, ns, name), dep in self._rest.store.dependents(uid):
                dep_rt = self._type(key)
                refs = [
                    r
                    for r in (dep.get("metadata") or {}).get("ownerReferences") or ()
                    if r.get("uid") != uid
                ]
                if dep_rt is not None:
                    self._rest.set_owner_references(dep_rt, ns, name, refs)
            self._rest.remove_finalizer(rt, change.namespace, change.name, ORPHAN_FINALIZER)
        elif FOREGROUND_FINALIZER in finalizers:
            dependents = self._rest.store.dependents(uid)
            if not dependents:
                self._rest.remove_finalizer(rt, change.namespace, change.name, FOREGROUND_FINALIZER)
            for (key, ns, name), dep in dependents:
                dep_rt = self._type(key)
                dep_meta = dep.get("metadata") or {}
                if dep_rt is not None and not dep_meta.get("deletionTimestamp"):
                    # Like the real collector: foreground only for dependents that have dependents.
                    has_own = bool(self._rest.store.dependents(dep_meta.get("uid", "")))
                    self._delete(dep_rt, ns, name, "Foreground" if has_own else "Background")
        if change.storage_key == "/namespaces":
            self._recheck_namespace(change.name)

    def _delete(self, rt: ResourceType, ns: str, name: str, policy: str) -> None:
        try:
            self._rest.delete(rt, ns, name, {"propagationPolicy": policy})
        except StatusError as exc:
            if exc.code != 404:
                raise

    def _collect_dependents(self, owner_uid: str) -> None:
        store = self._rest.store
        for (key, ns, name), dep in store.dependents(owner_uid):
            dep_rt = self._type(key)
            if dep_rt is None:
                continue
            refs = (dep.get("metadata") or {}).get("ownerReferences") or ()
            alive = [
                r
                for r in refs
                if r.get("uid") != owner_uid and store.get_by_uid(r.get("uid", "")) is not None
            ]
            if alive:
                self._rest.set_owner_references(
                    dep_rt, ns, name, [r for r in refs if r.get("uid") != owner_uid]
                )
            elif not (dep.get("metadata") or {}).get("deletionTimestamp"):
                self._delete(dep_rt, ns, name, "Background")

    def _collect_if_dangling(self, change: Change) -> None:
        """An object created with owner references none of which exists is deleted (like the real collector).

        This happens when a controller, working from a cache that has not yet
        seen its owner's deletion, recreates a child of a deleted owner.
        """
        store = self._rest.store
        refs = (change.obj.get("metadata") or {}).get("ownerReferences") or ()
        if not refs or any(store.get_by_uid(r.get("uid", "")) is not None for r in refs):
            return
        current = store.get(change.storage_key, change.namespace, change.name)
        rt = self._type(change.storage_key)
        uid = (change.obj.get("metadata") or {}).get("uid")
        if (
            rt is not None
            and current is not None
            and (current.get("metadata") or {}).get("uid") == uid
        ):
            self._delete(rt, change.namespace, change.name, "Background")

    def _recheck_owners(self, deleted: dict) -> None:
        """A dependent went away: an owner waiting in foreground deletion may now be done."""
        for ref in (deleted.get("metadata") or {}).get("ownerReferences") or ():
            found = self._rest.store.get_by_uid(ref.get("uid", ""))
            if found is None:
                continue
            (key, ns, name), owner = found
            meta = owner.get("metadata") or {}
            if FOREGROUND_FINALIZER in (
                meta.get("finalizers") or ()
            ) and not self._rest.store.dependents(meta.get("uid", "")):
                rt = self._type(key)
                if rt is not None:
                    self._rest.remove_finalizer(rt, ns, name, FOREGROUND_FINALIZER)

    def _recheck_namespace(self, namespace: str) -> None:
        store = self._rest.store
        ns_obj = store.get("/namespaces", "", namespace)
        if ns_obj is None or not (ns_obj.get("metadata") or {}).get("deletionTimestamp"):
            return
        remaining = store.keys_in_namespace(namespace)
        for key, ns, name in remaining:
            rt = self._type(key)
            obj = store.get(key, ns, name)
            if (
                rt is not None
                and obj is not None
                and not (obj.get("metadata") or {}).get("deletionTimestamp")
            ):
                self._delete(rt, ns, name, "Background")
        left = store.keys_in_namespace(namespace)
        ns_rt = self._type("/namespaces")
        if ns_rt is None:
            return
        if not left:
            self._rest.remove_finalizer(ns_rt, "", namespace, NAMESPACE_FINALIZER, spec=True)
            return
        # Content held by finalizers: report it in the namespace's conditions, as the namespace controller does.
        current = store.get("/namespaces", "", namespace)
        if current is not None:
            status = dict(
                current.get("status") or {}, conditions=self._namespace_conditions(left, current)
            )
            self._rest.write_status(ns_rt, "", namespace, status)

    def _namespace_conditions(self, left: list, namespace: dict) -> list[dict]:
        """The namespace controller's five conditions for a namespace whose content is not gone yet."""
        counts: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for key, ns, name in left:
            rt = self._type(key)
            obj = self._rest.store.get(key, ns, name)
            if rt is None or obj is None:
                continue
            resource = f"{rt.plural}.{rt.group}"
            counts[resource] = counts.get(resource, 0) + 1
            for finalizer in (obj.get("metadata") or {}).get("finalizers") or ():
                finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
        previous = {
            c.get("type"): c
            for c in (namespace.get("status") or {}).get("conditions") or ()
            if isinstance(c, dict)
        }
        now = self._rest.timestamp()

        def condition(kind: str, status: str, reason: str, message: str) -> dict:
            old = previous.get(kind)
            same = old is not None and old.get("status") == status
            when = old.get("lastTransitionTime") if same and old is not None else now
            return {
                "type": kind,
                "status": status,
                "lastTransitionTime": when,
                "reason": reason,
                "message": message,
            }

        remaining = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(counts.items()))
        held = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
        conditions = [
            condition(
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            condition(
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            condition(
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            condition(
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                f"Some resources are remaining: {remaining}",
            ),
        ]
        if finalizers:
            conditions.append(
                condition(
                    "NamespaceFinalizersRemaining",
                    "True",
                    "SomeFinalizersRemain",
                    f"Some content in the namespace has finalizers remaining: {held}",
                )
            )
        return conditions
