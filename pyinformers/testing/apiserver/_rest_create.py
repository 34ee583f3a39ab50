"""The create verb of the embedded API server.

Owns :meth:`CreateVerb.create`: the body checked and completed
(``generateName``, defaults, server-owned fields, ``uid``,
``creationTimestamp``, ``generation``), admission (mutating webhooks before
name generation, validating webhooks after), custom resources' schemas, a
Service's cluster IP, what a new namespace is filled with, and a new CRD
established at once.

Invariants: a dry run stores nothing (its answer has no resourceVersion); an
object is created only in an existing, non-terminating namespace, and only
under a name nothing else has (409 otherwise, re-checked after the webhooks).

Thread-safety: the write runs under the store lock (released only while a
validating webhook runs); name generation has a lock of its own.
"""

from __future__ import annotations

import builtins
import uuid
from typing import Any

from pyinformers.testing.apiserver._crd import established_status
from pyinformers.testing.apiserver._defaults import (
    apply_defaults,
    create_defaults,
    defaults_on_create,
    namespace_contents,
)
from pyinformers.testing.apiserver._objects import SERVER_OWNED, copy_json
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest_core import CRD_STORAGE_KEY, RestCore
from pyinformers.testing.apiserver._status import StatusError, already_exists, bad_request
from pyinformers.testing.apiserver._validation import check_body, normalize_times, validate_object

__all__ = ["CreateVerb"]

_NAME_ALPHABET = (
    "bcdfghjklmnpqrstvwxz2456789"  # what the real server uses for generateName suffixes
)


class CreateVerb(RestCore):
    """create, and what it fills in."""

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        user: str | None = None,
        field_manager: str | None = None,
    ) -> dict:
        """Create an object from ``body`` (which is consumed: completed and stored as is); returns it.

        With ``dry_run`` nothing is stored: the answer is the object as it would
        be, with uid and creationTimestamp but no resourceVersion. ``field_manager``:
        record the create as that manager's ``Update`` (None: keep the body's
        managedFields, as an apply or the server's own writers leave them).
        """
        ns = self._ns(rt, namespace)
        obj = check_body(self.registry, rt, body, ns, None)
        meta = obj["metadata"]
        for field in SERVER_OWNED:
            meta.pop(field, None)
        if meta.get("resourceVersion"):
            raise StatusError(500, "", "resourceVersion should not be set on objects to be created")
        meta.pop("resourceVersion", None)
        if rt.has_status and rt.storage_key not in ("/namespaces", "/nodes"):
            obj.pop("status", None)
            if not rt.is_custom:
                obj[
                    "status"
                ] = {}  # built-in kinds always carry a status, empty until a controller writes it
        attrs = self._attributes(
            rt, "CREATE", ns, str(meta.get("name") or ""), None, dry_run, user, warnings
        )
        if (
            attrs is not None
        ):  # mutating webhooks see the decoded, defaulted object, before name generation
            normalize_times(rt, obj)
            apply_defaults(rt, obj)
            obj = self.webhooks.mutate(attrs, obj, None) or obj
            obj = check_body(self.registry, rt, obj, ns, None)
            meta = obj["metadata"]
        with self.store.lock:
            self._require_namespace(rt, ns, for_create=True, name=str(meta.get("name") or ""))
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generate_name(rt, ns, meta["generateName"])
            normalize_times(rt, obj)
            apply_defaults(rt, obj)
            obj = self._check_schema(rt, obj, field_validation, warnings)
            if field_manager is not None:
                # what the decoder defaulted is the creator's; what the registry fills in next is nobody's
                self.field_management.record(rt, None, obj, field_manager)
            create_defaults(rt, obj, self._free_cluster_ip)
            meta = obj["metadata"]
            validate_object(rt, obj)
            self._check_crd(rt, obj)
            name = meta["name"]
            if self.store.get(rt.storage_key, ns, name) is not None:
                raise already_exists(rt.plural, rt.group, name)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self._timestamp()
            if rt.has_generation:
                meta["generation"] = 1
            if attrs is not None:
                attrs.name = name
                self._unlocked(lambda: self.webhooks.validate(attrs, obj, None))
                if self.store.get(rt.storage_key, ns, name) is not None:
                    raise already_exists(rt.plural, rt.group, name)
            if dry_run:
                return self._out(rt, obj)
            defaults_on_create(self.registry, rt, obj, self._timestamp())
            obj = self._to_storage(rt, obj)
            stored = self.store.put(rt.storage_key, ns, name, obj)
            if rt.storage_key == "/namespaces" and self.namespace_defaults:
                self._populate_namespace(name)
            if rt.storage_key == CRD_STORAGE_KEY:
                spec = obj.get("spec") or {}
                self.hub.start_cache(
                    f"{spec.get('group')}/{(spec.get('names') or {}).get('plural')}"
                )
                # The answer shows the CRD as created; the CRD controllers accept its names and
                # establish it a moment later (here: at once, in a second write).
                established = copy_json(stored)
                established["status"] = established_status(stored, self._timestamp())
                self.store.put(rt.storage_key, ns, name, established)
            return self._out(rt, stored)

    def _generate_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        if not isinstance(prefix, str):
            raise bad_request("metadata.generateName must be a string")
        base = prefix[: 253 - 5] if len(prefix) > 253 - 5 else prefix
        with self._random_lock:
            for _ in range(16):
                candidate = base + "".join(self._random.choice(_NAME_ALPHABET) for _ in range(5))
                if self.store.get(rt.storage_key, namespace, candidate) is None:
                    return candidate
        raise StatusError(
            500,
            "AlreadyExists",
            f"could not generate a unique name from generateName {prefix!r}; try again",
            retry_after=1,
        )

    def _free_cluster_ip(self) -> str:
        """The lowest address of 10.0.0.0/24 above .1 (the ``kubernetes`` Service's) no Service has (store lock held)."""
        services, _ = self.store.snapshot("/services", None)
        taken = {ip for s in services for ip in (s.get("spec") or {}).get("clusterIPs") or ()}
        for host in range(2, 255):
            if f"10.0.0.{host}" not in taken:
                return f"10.0.0.{host}"
        raise StatusError(
            500,
            "InternalError",
            "Internal error occurred: failed to allocate a serviceIP: range is full",
        )

    def _populate_namespace(self, namespace: str) -> None:
        """What kube-controller-manager puts in every new namespace (store lock held)."""
        for plural, body in namespace_contents():
            rt = self.registry.lookup("", "v1", plural)
            if rt is not None:
                self.create(rt, namespace, body)
