"""The shared ground of the embedded API server's REST verbs (:class:`RestCore`).

Owns what every verb of :class:`~._rest.RestApi` relies on: the collaborators
(store, registry, watch hub, admission webhooks, field management), the
server's clock, namespace checks, reading an object or 404, the version an
object is seen through (CRD conversion webhooks, a custom resource's read
defaults, the shape of a List), the admission attributes of a write and the
release of the store lock while a webhook runs, the schema and CRD checks of
a write, and the end of a deletion (an object whose last finalizer is gone
is removed; a removed CRD takes its objects and watches with it).

Invariants: an object is stored in its storage version and always answered
in the version it was asked through; after a webhook ran with the lock
released, :meth:`RestCore._still` re-checks that the object was not changed
meanwhile (409 otherwise).

Thread-safety: the helpers marked "store lock held" run inside a verb's
read-modify-write; the rest only read (the store takes its own lock).
"""

from __future__ import annotations

import builtins
import random
import threading
from collections.abc import Callable
from typing import Any

from pyinformers.testing.apiserver._crd import (
    check_custom_object,
    read_defaults,
    schema_for,
    validate_crd,
)
from pyinformers.testing.apiserver._managed import FieldManagement
from pyinformers.testing.apiserver._objects import meta_of, now_rfc3339
from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._status import (
    StatusError,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from pyinformers.testing.apiserver._storage import Store
from pyinformers.testing.apiserver._watch import WatchHub
from pyinformers.testing.apiserver._webhooks import (
    MUTATING_KEY,
    VALIDATING_KEY,
    Attributes,
    WebhookDispatcher,
)

__all__ = ["CRD_STORAGE_KEY", "RestCore"]

CRD_STORAGE_KEY = "apiextensions.k8s.io/customresourcedefinitions"


class RestCore:
    """The state and helpers every verb shares (see the module docstring). Thread-safe."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        hub: WatchHub,
        *,
        time_func: Callable[[], float],
        namespace_defaults: bool = True,
    ) -> None:
        self.store = store
        self.registry = registry
        self.hub = hub
        self._time = time_func
        self.namespace_defaults = namespace_defaults
        self._random = random.Random()
        self._random_lock = threading.Lock()
        self.webhooks = WebhookDispatcher(
            store.objects,
            lambda name: store.get("/namespaces", "", name),
            lambda name: store.get(CRD_STORAGE_KEY, "", name),
        )
        self.field_management = FieldManagement(
            lambda rt: self.store.get(CRD_STORAGE_KEY, "", rt.crd_name or ""), self._timestamp
        )

    def _timestamp(self) -> str:
        return now_rfc3339(self._time())

    def timestamp(self) -> str:
        """The server's current time as an RFC 3339 timestamp (for its background writers)."""
        return self._timestamp()

    def _ns(self, rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "") if rt.namespaced else ""

    def _require_namespace(
        self, rt: ResourceType, namespace: str | None, *, for_create: bool, name: str = ""
    ) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise bad_request(
                f"{rt.plural} is namespaced: a namespace is required in the request path"
            )
        ns = self.store.get("/namespaces", "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if for_create and meta_of(ns).get("deletionTimestamp"):
            subject = f'{rt.plural} "{name}"' if name else rt.plural
            details: dict[str, Any] = (
                {"name": name, "kind": rt.plural} if name else {"kind": rt.plural}
            )
            if rt.group:
                details["group"] = rt.group
            details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise StatusError(
                403,
                "Forbidden",
                f"{subject} is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                details=details,
            )

    def _get_existing(self, rt: ResourceType, namespace: str, name: str) -> dict:
        obj = self.store.get(rt.storage_key, namespace, name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def _out(self, rt: ResourceType, obj: dict) -> dict:
        """The object as seen through ``rt``'s version: converted by the CRD's webhook when it has one,
        then, for a custom resource, with its schema's defaults, as read from storage."""
        if obj.get("apiVersion") != rt.api_version:
            if rt.crd_name and self.webhooks.converts(rt.crd_name):
                obj = self.webhooks.convert(rt.crd_name, [obj], rt.api_version)[0]
            else:
                obj = dict(obj, apiVersion=rt.api_version)
        if rt.is_custom:
            crd = self.store.get(CRD_STORAGE_KEY, "", rt.crd_name or "")
            obj = read_defaults(schema_for(crd, rt.version), obj)
        return obj

    def _out_many(self, rt: ResourceType, objects: builtins.list[dict]) -> builtins.list[dict]:
        """Objects as seen through ``rt``'s version; one conversion review for all that need one."""
        if rt.crd_name and self.webhooks.converts(rt.crd_name):
            objects = self.webhooks.convert(rt.crd_name, objects, rt.api_version)
        return [self._out(rt, o) for o in objects]

    def _to_storage(self, rt: ResourceType, obj: dict) -> dict:
        """A custom resource converted by its CRD's webhook to the storage version (else unchanged)."""
        if not rt.crd_name or not self.webhooks.converts(rt.crd_name):
            return obj
        version = self.webhooks.storage_version(rt.crd_name)
        if version is None or version == rt.version:
            return obj
        return self.webhooks.convert(rt.crd_name, [obj], f"{rt.group}/{version}")[0]

    # -- admission ---------------------------------------------------------------------

    def _attributes(
        self,
        rt: ResourceType,
        operation: str,
        ns: str,
        name: str,
        subresource: str | None,
        dry_run: bool,
        user: str | None,
        warnings: builtins.list | None,
        options: dict | None = None,
    ) -> Attributes | None:
        """The admission attributes of a write, or None when no webhook could apply (none configured,
        or a webhook configuration itself, which the real server never sends to webhooks)."""
        if rt.storage_key in (MUTATING_KEY, VALIDATING_KEY) or not self.webhooks.active():
            return None
        return Attributes(
            rt.group,
            rt.version,
            rt.plural,
            rt.kind,
            rt.namespaced,
            operation,
            ns,
            name,
            subresource or "",
            user=user or "admin",
            dry_run=dry_run,
            options=options,
            warnings=warnings if warnings is not None else [],
        )

    def _unlocked(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` (a webhook) with the store lock released once, so the webhook may call this server."""
        self.store.lock.release()
        try:
            return call()
        finally:
            self.store.lock.acquire()

    def _still(self, rt: ResourceType, ns: str, name: str, old: dict) -> None:
        """Conflict unless the stored object is still ``old`` (it may change while a webhook runs)."""
        current = self.store.get(rt.storage_key, ns, name)
        if current is None or current["metadata"].get("resourceVersion") != old["metadata"].get(
            "resourceVersion"
        ):
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )

    # -- checks of a write --------------------------------------------------------------

    def _check_crd(self, rt: ResourceType, obj: dict) -> None:
        if rt.storage_key == CRD_STORAGE_KEY:
            causes = validate_crd(obj)
            if causes:
                raise invalid(rt.kind, rt.group, str(meta_of(obj).get("name") or ""), causes)

    def _check_schema(
        self,
        rt: ResourceType,
        obj: dict,
        field_validation: str,
        warnings: builtins.list | None,
        *,
        status_only: bool = False,
        old: dict | None = None,
    ) -> dict:
        """A custom resource checked against its schema and CEL rules, pruned and defaulted (422, or 400 if Strict).

        ``old`` is the stored object on an update (transition rules, ratcheting).
        """
        if not rt.is_custom:
            return obj
        crd = self.store.get(CRD_STORAGE_KEY, "", rt.crd_name or "")
        pruned, causes, unknown, ratcheted = check_custom_object(
            schema_for(crd, rt.version), obj, status_only=status_only, old=old
        )
        if ratcheted and warnings is not None:
            warnings.extend(ratcheted)
        if unknown and field_validation == "Strict":
            listed = ", ".join(f'unknown field "{field}"' for field in unknown)
            raise bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding error: {listed}'
            )
        if unknown and field_validation != "Ignore" and warnings is not None:
            warnings.extend(f'unknown field "{field}"' for field in unknown)
        if causes:
            raise invalid(rt.kind, rt.group, str(meta_of(obj).get("name") or ""), causes)
        return pruned

    # -- lists and the end of a deletion -------------------------------------------------

    def _list_object(self, rt: ResourceType, metadata: dict, objects: builtins.list[dict]) -> dict:
        if rt.is_custom:
            # Custom resource lists keep each item's kind and apiVersion and always say continue.
            metadata.setdefault("continue", "")
            items = self._out_many(rt, objects)
        else:
            # Built-in lists carry kind and apiVersion once, on the list, not on the items.
            items = [
                {k: v for k, v in o.items() if k != "kind" and k != "apiVersion"} for o in objects
            ]
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": metadata,
            "items": items,
        }

    def _deletion_blocked(self, rt: ResourceType, obj: dict) -> bool:
        if meta_of(obj).get("finalizers"):
            return True
        return rt.storage_key == "/namespaces" and bool((obj.get("spec") or {}).get("finalizers"))

    def _maybe_finish_deletion(self, rt: ResourceType, ns: str, name: str, obj: dict) -> dict:
        if meta_of(obj).get("deletionTimestamp") and not self._deletion_blocked(rt, obj):
            return self._remove(rt, ns, name) or obj
        return obj

    def _remove(self, rt: ResourceType, ns: str, name: str) -> dict | None:
        final = self.store.remove(rt.storage_key, ns, name)
        if final is not None and rt.storage_key == CRD_STORAGE_KEY:
            for served in self.registry.uninstall_crd(name):
                for obj in self.store.objects(served.storage_key):
                    meta = meta_of(obj)
                    self.store.remove(served.storage_key, meta.get("namespace") or "", meta["name"])
                # As on a real server, the resource's open watches end (cleanly) after their DELETED events.
                self.hub.finish_resource(served.storage_key, "removed")
        return final
