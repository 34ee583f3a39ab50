"""The API semantics of the in-process server: what each verb does to the store.

:class:`RestApi` implements create (with ``generateName``), get, list (with
selectors, ``limit``/``continue`` paging at a fixed resourceVersion,
``resourceVersion``/``resourceVersionMatch``), update (optimistic concurrency
on ``metadata.resourceVersion``), patch, the ``/status`` subresource, delete
(finalizers, ``deletionTimestamp``, propagation policies, preconditions),
deletecollection, and the starting point of watches. It validates input and
raises :class:`~pyinformers.testing.apiserver._status.StatusError` with the status code
and reason a real API server uses. It knows nothing of HTTP.

Its helpers live beside it, one concern each: :mod:`.options` (query
parameters, continue tokens), :mod:`.validation` (request bodies and
metadata), :mod:`.defaults` (what create fills in), :mod:`.objects`
(constants and pure helpers over stored objects).

Rules it keeps (from the Kubernetes API conventions):

* the server owns ``uid``, ``creationTimestamp``, ``resourceVersion``,
  ``generation`` and ``deletionTimestamp``; only kinds with a spec carry a
  ``generation`` (1 on create, +1 when anything outside ``metadata`` -- and
  outside ``status`` for resources with a status subresource -- changes, for
  Deployments annotations too, and when the object is marked for deletion);
* for resources with a status subresource, writes to the main resource keep
  the stored ``.status`` and writes to ``/status`` change only ``.status``;
* an update that changes nothing writes nothing (no new resourceVersion);
* an object with finalizers is only marked for deletion (the DELETE answers
  200 with it); it goes away when an update removes its last finalizer (that
  update is answered with the final state at the previous resourceVersion,
  and watchers see only DELETED);
* custom resources are checked against their CRD's schema and pruned
  (:mod:`.crd`), built-in kinds get their defaults (:mod:`.defaults`);
* namespaced writes need an existing, non-terminating namespace.

Thread-safety: every read-modify-write holds the store lock, so concurrent
requests serialise per write and conflicts are detected exactly.
"""

from __future__ import annotations

import bisect
import builtins
import random
import threading
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from pyinformers.testing.apiserver._apply import apply_patch, apply_scale
from pyinformers.testing.apiserver._crd import (
    CLEANUP_FINALIZER,
    check_custom_object,
    established_status,
    json_type,
    read_defaults,
    schema_for,
    terminating_status,
    validate_crd,
)
from pyinformers.testing.apiserver._defaults import (
    apply_defaults,
    create_defaults,
    defaults_on_create,
    namespace_contents,
)
from pyinformers.testing.apiserver._field_selection import selectable
from pyinformers.testing.apiserver._managed import FieldManagement
from pyinformers.testing.apiserver._objects import (
    FOREGROUND_FINALIZER,
    NAMESPACE_FINALIZER,
    ORPHAN_FINALIZER,
    PROPAGATION_POLICIES,
    SERVER_OWNED,
    copy_json,
    meta_of,
    now_rfc3339,
    same_content,
    spec_part,
)
from pyinformers.testing.apiserver._options import (
    ListOptions,
    WatchOptions,
    check_field_selector,
    decode_continue,
    encode_continue,
    rv_param,
    rv_syntax_error,
)
from pyinformers.testing.apiserver._patch import (
    PatchError,
    UnknownDirective,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._scale import replicas_from_scale, scale_of
from pyinformers.testing.apiserver._status import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    expired,
    invalid,
    not_found,
    success_status,
    unsupported_media_type,
)
from pyinformers.testing.apiserver._storage import Store
from pyinformers.testing.apiserver._validation import check_body, normalize_times, validate_object
from pyinformers.testing.apiserver._watch import Watcher, WatchHub
from pyinformers.testing.apiserver._webhooks import (
    MUTATING_KEY,
    VALIDATING_KEY,
    Attributes,
    WebhookDispatcher,
)

__all__ = ["RestApi", "FOREGROUND_FINALIZER", "NAMESPACE_FINALIZER", "ORPHAN_FINALIZER"]

CRD_STORAGE_KEY = "apiextensions.k8s.io/customresourcedefinitions"
_NAME_ALPHABET = (
    "bcdfghjklmnpqrstvwxz2456789"  # what the real server uses for generateName suffixes
)


def _json_kind(value: Any) -> str:
    """How Go's JSON decoder names a JSON value's type in its errors."""
    kind = json_type(value)
    return {"boolean": "bool", "integer": "number"}.get(kind, kind)


class RestApi:
    """Verbs over the store (see the module docstring). Thread-safe."""

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

    def __repr__(self) -> str:
        return f"<RestApi {self.store!r}>"

    # -- helpers ---------------------------------------------------------------------

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

    # -- admission ----------------------------------------------------------------------------

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

    # -- create --------------------------------------------------------------------------

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

    # -- reads -----------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict:
        return self._out(rt, self._get_existing(rt, self._ns(rt, namespace), name))

    def list(self, rt: ResourceType, namespace: str | None, options: ListOptions) -> dict:
        """A List object (one page of it when ``options.limit`` is set)."""
        ns = self._ns(rt, namespace) if namespace else None
        check_field_selector(rt.storage_key, options.field_selector)
        start = ""
        at_rv: int | None
        if options.continue_:
            at_rv, start = decode_continue(options.continue_)
            if options.resource_version not in (None, "0"):
                raise bad_request("specifying resource version is not allowed when using continue")
            if at_rv < self.store.compacted_rv:
                # The answer carries a token that continues from the same key at the current rv.
                fresh = encode_continue(self.store.current_rv, start)
                raise expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter, or use the continue token "
                    "in this response to retrieve the remainder of the results. Continuing with the "
                    "provided token results in an inconsistent list - objects that were created, modified, "
                    "or deleted between the time the first chunk was returned and now may show up in the list.",
                    metadata={"continue": fresh},
                )
        else:
            requested = rv_param(options.resource_version)
            at_rv = requested if options.resource_version_match == "Exact" else None
            if (
                requested
                and options.resource_version_match != "Exact"
                and requested > self.store.current_rv
            ):
                self.store.snapshot(
                    rt.storage_key, ns, at_rv=requested
                )  # raises "Too large resource version"
        snap = self.store.list_snapshot(rt.storage_key, ns, at_rv=at_rv)
        keys, objects, list_rv = snap.keys, snap.objects, snap.rv
        first = bisect.bisect_right(keys, start) if start else 0
        # resourceVersion=0 is served from the watch cache, which ignores limit (all items, no continue).
        limit = 0 if options.resource_version == "0" else options.limit
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if options.label_selector is None and options.field_selector is None:
            end = len(objects) if not limit else min(len(objects), first + limit)
            page = objects[first:end]
            if end < len(objects):
                metadata["continue"] = encode_continue(list_rv, keys[end - 1])
                metadata["remainingItemCount"] = len(objects) - end
        else:
            # Filter only as far as this page needs. A full page says "continue" whenever any object
            # (matching or not) comes after its last item, as the real server's paged reads do: the
            # next page may then be empty.
            page = []
            for i in range(first, len(objects)):
                obj = objects[i]
                if not self._matches(obj, options, rt.storage_key):
                    continue
                page.append(obj)
                if limit and len(page) == limit:
                    if i < len(objects) - 1 and not self._reads_one_key(
                        rt, ns, options.field_selector
                    ):
                        metadata["continue"] = encode_continue(list_rv, keys[i])
                    break
        return self._list_object(rt, metadata, page)

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

    @staticmethod
    def _reads_one_key(rt: ResourceType, namespace: str | None, field_selector: Any) -> bool:
        """Whether the real server reads just one object's key for this list (``metadata.name=X`` where the key is known)."""
        if field_selector is None or (rt.namespaced and namespace is None):
            return False
        return any(
            r.field == "metadata.name" and r.operator.value == "="
            for r in field_selector.requirements
        )

    @staticmethod
    def _matches(obj: dict, options: Any, storage_key: str) -> bool:
        if options.label_selector is not None and not options.label_selector.matches(
            meta_of(obj).get("labels")
        ):
            return False
        field = options.field_selector
        if field is not None and not field.matches(selectable(storage_key, obj, field)):
            return False
        return True

    def open_watch(
        self, rt: ResourceType, namespace: str | None, options: WatchOptions, *, max_queue: int
    ) -> tuple[Watcher, builtins.list[dict], int, bool]:
        """Register a watcher; returns (watcher, initial objects, start rv, send initial-events-end bookmark).

        Where a watch starts, as kube-apiserver 1.36 decides it: ``sendInitialEvents``
        left out means true for a watch without a resourceVersion (or ``"0"``) and
        false for one from a resourceVersion. With initial events the current
        objects come first as ADDED and, when the watch allows bookmarks, the
        bookmark annotated ``k8s.io/initial-events-end`` -- whether or not the
        client asked for initial events by name. Without them a watch replays
        history after its resourceVersion, or (none, or ``"0"``) starts from now.
        """
        ns = self._ns(rt, namespace) if namespace else None
        check_field_selector(rt.storage_key, options.field_selector)
        watcher = Watcher(
            rt,
            ns,
            label_selector=options.label_selector,
            field_selector=options.field_selector,
            max_queue=max_queue,
        )
        if rt.crd_name and self.webhooks.converts(rt.crd_name):
            crd_name = rt.crd_name
            watcher.convert = lambda obj: self.webhooks.convert(crd_name, [obj], rt.api_version)[0]
        try:
            rv = rv_param(options.resource_version)
        except (
            StatusError
        ):  # a watch's bad resourceVersion is a 500 without a reason on the real server
            raise StatusError(500, "", rv_syntax_error(options.resource_version or "")) from None
        initial_events = options.send_initial_events
        end_marker = options.allow_bookmarks
        if initial_events is None:
            initial_events = not rv
            end_marker = (
                end_marker and not options.legacy_path
            )  # sendInitialEvents is defaulted only for ?watch=true
        if initial_events:
            objects, start = self.hub.open(watcher, since_rv=None, initial_state=True)
            if rv and rv > start:
                self.hub.close(watcher)
                self.store.snapshot(
                    rt.storage_key, ns, at_rv=rv
                )  # raises "Too large resource version"
            # The end marker is a bookmark: only a watch that allows bookmarks gets it.
            return watcher, objects, start, end_marker
        _, start = self.hub.open(watcher, since_rv=rv or None, initial_state=False)
        return watcher, [], start, False

    # -- update / patch ------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        user: str | None = None,
        field_manager: str | None = None,
    ) -> dict:
        """Replace an object (or its ``status``/``finalize`` subresource) with ``body`` (consumed)."""
        ns = self._ns(rt, namespace)
        obj = check_body(self.registry, rt, body, ns, name)
        obj["metadata"]["name"] = name
        attrs = self._attributes(rt, "UPDATE", ns, name, subresource, dry_run, user, warnings)
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            if attrs is not None:
                obj = self._mutate_update(rt, ns, name, attrs, obj, old)
            return self._out(
                rt,
                self._apply_update(
                    rt,
                    ns,
                    name,
                    old,
                    obj,
                    subresource=subresource,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    warnings=warnings,
                    attrs=attrs,
                    field_manager=field_manager,
                ),
            )

    def _mutate_update(
        self, rt: ResourceType, ns: str, name: str, attrs: Attributes, new: dict, old: dict
    ) -> dict:
        """``new`` after the mutating webhooks (store lock held, released while they run)."""
        normalize_times(rt, new)
        apply_defaults(rt, new)
        old_view = self._out(rt, old)
        mutated = self._unlocked(lambda: self.webhooks.mutate(attrs, new, old_view)) or new
        self._still(rt, ns, name, old)
        return check_body(self.registry, rt, mutated, ns, name)

    def _apply_update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        old: dict,
        new: dict,
        *,
        subresource: str | None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        attrs: Attributes | None = None,
        field_manager: str | None = None,
        managed_subresource: str | None = None,
    ) -> dict:
        """Write ``new`` over ``old`` (store lock held). ``new`` is owned by this call.

        ``field_manager``: record the write as that manager's ``Update`` (of
        ``managed_subresource``, default ``subresource``); None: keep the managedFields
        ``new`` brings (an apply computed them).

        With ``attrs`` the validating webhooks see the result (with the lock released).
        """
        expected = new["metadata"].get("resourceVersion")
        incoming_managed = new["metadata"].get("managedFields")
        if expected and expected != old["metadata"]["resourceVersion"]:
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        old_meta = old["metadata"]
        if subresource == "status":
            if not rt.has_status:
                raise not_found(
                    rt.plural, rt.group, name, message=f"{rt.plural} has no status subresource"
                )
            status = new.get("status")
            new = dict(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            new["metadata"] = dict(old_meta)
            new = self._check_schema(rt, new, field_validation, warnings, status_only=True, old=old)
        elif subresource == "finalize" and rt.storage_key == "/namespaces":
            spec = dict(old.get("spec") or {})
            spec["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
            new = dict(old, spec=spec)
            new["metadata"] = dict(old_meta)
        elif subresource:
            raise not_found(
                rt.plural,
                rt.group,
                name,
                message=f"the server could not find the subresource {subresource!r}",
            )
        else:
            meta = new["metadata"]
            for field in SERVER_OWNED:
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            meta["namespace"] = old_meta.get("namespace")
            if not rt.namespaced:
                meta.pop("namespace", None)
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            normalize_times(rt, new)
            apply_defaults(rt, new)
            new = self._check_schema(rt, new, field_validation, warnings, old=old)
            meta = new["metadata"]
            validate_object(rt, new)
            self._check_crd(rt, new)
            new = self._to_storage(rt, new)
            meta = new["metadata"]
            if old_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
                if added:
                    found = "[]string{" + ", ".join(f'"{f}"' for f in sorted(added)) + "}"
                    cause = (
                        "FieldValueForbidden",
                        "metadata.finalizers",
                        f"no new finalizers can be added if the object is being deleted, found new finalizers {found}",
                    )
                    raise invalid(rt.kind, rt.group, name, [cause, cause], summary_causes=1)
            if rt.has_generation and spec_part(rt, new) != spec_part(rt, old):
                meta["generation"] = int(old_meta.get("generation") or 1) + 1
        if field_manager is not None:
            self.field_management.record(
                rt, old, new, field_manager, subresource=managed_subresource or subresource
            )
        elif incoming_managed is not None:
            new["metadata"]["managedFields"] = incoming_managed
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if attrs is not None:
            final, old_view = self._out(rt, new), self._out(rt, old)
            self._unlocked(lambda: self.webhooks.validate(attrs, final, old_view))
            self._still(rt, ns, name, old)
        if same_content(new, old) and new["metadata"].get("managedFields") == old_meta.get(
            "managedFields"
        ):
            return old
        if dry_run:
            return new
        if old_meta.get("deletionTimestamp") and not self._deletion_blocked(rt, new):
            # The write that removes the last finalizer is not stored: the object goes,
            # watchers see DELETED with its state before this write, and the answer is
            # the new state at the previous resourceVersion (the real server's behaviour).
            self._remove(rt, ns, name)
            return new
        stored = self.store.put(rt.storage_key, ns, name, new)
        if rt.storage_key == CRD_STORAGE_KEY and not subresource:
            try:
                self.registry.install_crd(stored)
            except ValueError:
                pass  # the previous versions stay served; a real server would reject the update up front
        return self._maybe_finish_deletion(rt, ns, name, stored)

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

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        content_type: str,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        user: str | None = None,
        field_manager: str | None = None,
    ) -> dict:
        ns = self._ns(rt, namespace)
        media = (content_type or "").split(";")[0].strip().lower()
        document = self._patch_document(rt, body, media)
        attrs = self._attributes(
            rt, "UPDATE", ns, name, subresource, dry_run, user, warnings, {"kind": "PatchOptions"}
        )
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            patched = self._apply_patch(self._out(rt, old), document, media)
            if not isinstance(patched, dict):
                raise invalid(
                    rt.kind,
                    rt.group,
                    name,
                    [("FieldValueInvalid", "", "the patched document is not an object")],
                )
            patched = check_body(self.registry, rt, patched, ns, name)
            if patched["metadata"].get("name") != name:
                raise bad_request("a patch cannot change metadata.name")
            if attrs is not None:
                patched = self._mutate_update(rt, ns, name, attrs, patched, old)
            return self._out(
                rt,
                self._apply_update(
                    rt,
                    ns,
                    name,
                    old,
                    patched,
                    subresource=subresource,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    warnings=warnings,
                    attrs=attrs,
                    field_manager=field_manager,
                ),
            )

    @staticmethod
    def _patch_document(rt: ResourceType, body: bytes, media: str) -> Any:
        """The parsed patch, after the media type checks (415, 400) the real server makes."""
        if media == "application/strategic-merge-patch+json" and rt.is_custom:
            raise unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            )
        if media not in (
            "application/merge-patch+json",
            "application/json-patch+json",
            "application/strategic-merge-patch+json",
        ):
            raise unsupported_media_type(details={})
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"error decoding patch: {exc}") from None
        if media == "application/json-patch+json" and not isinstance(document, list):
            raise bad_request(
                f"error decoding patch: json: cannot unmarshal {_json_kind(document)} into Go value of type []handlers.jsonPatchOp"
            )
        if media != "application/json-patch+json" and not isinstance(document, dict):
            raise bad_request(
                f"error decoding patch: json: cannot unmarshal {_json_kind(document)} into Go value of type map[string]interface {{}}"
            )
        return document

    def apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        *,
        manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
    ) -> tuple[int, dict]:
        """Server-side apply of ``body`` as ``manager`` (see :mod:`._apply`): (201 or 200, the object)."""
        if subresource == "scale":
            return apply_scale(
                self, rt, namespace, name, body, manager=manager, force=force, dry_run=dry_run
            )
        return apply_patch(
            self,
            rt,
            namespace,
            name,
            body,
            manager=manager,
            force=force,
            subresource=subresource,
            dry_run=dry_run,
            field_validation=field_validation,
            warnings=warnings,
        )

    @staticmethod
    def _apply_patch(old: dict, document: Any, media: str) -> Any:
        try:
            if media == "application/json-patch+json":
                return json_patch(old, document)
            apply = (
                merge_patch if media == "application/merge-patch+json" else strategic_merge_patch
            )
            return copy_json(apply(old, document))
        except UnknownDirective as exc:
            raise StatusError(500, "", str(exc)) from None
        except PatchError:
            # The real server does not say which operation failed.
            raise StatusError(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
                details={},
            ) from None

    # -- scale and token subresources ----------------------------------------------------

    def set_replicas(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        scale: Any,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict:
        """PUT .../scale: set ``spec.replicas`` from an autoscaling/v1 Scale; returns the object."""
        ns = self._ns(rt, namespace)
        if not isinstance(scale, dict) or (scale.get("kind") or "Scale") != "Scale":
            other = scale.get("kind") if isinstance(scale, dict) else type(scale).__name__
            version = (
                (scale.get("apiVersion") or "v1").rsplit("/", 1)[-1]
                if isinstance(scale, dict)
                else "v1"
            )
            raise bad_request(
                f'{other} in version "{version}" cannot be handled as a Scale: converting ({version}.{other}) to (autoscaling.Scale): unknown conversion'
            )
        try:
            replicas = replicas_from_scale(scale)
        except ValueError:
            raise invalid(
                "Scale",
                "autoscaling",
                name,
                [("FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0")],
            ) from None
        expected = meta_of(scale).get("resourceVersion")
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            if expected and expected != old["metadata"]["resourceVersion"]:
                raise conflict(
                    rt.plural,
                    rt.group,
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            new = copy_json(old)
            new.setdefault("spec", {})["replicas"] = replicas
            new["metadata"].pop("resourceVersion", None)
            return self._out(
                rt,
                self._apply_update(
                    rt,
                    ns,
                    name,
                    old,
                    new,
                    subresource=None,
                    dry_run=dry_run,
                    field_manager=field_manager,
                    managed_subresource="scale",
                ),
            )

    def patch_scale(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        content_type: str,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict:
        """PATCH .../scale: patch the object's Scale, then set its replicas; returns the object."""
        ns = self._ns(rt, namespace)
        media = (content_type or "").split(";")[0].strip().lower()
        document = self._patch_document(rt, body, media)
        with self.store.lock:
            scale = scale_of(self._get_existing(rt, ns, name))
            return self.set_replicas(
                rt,
                ns,
                name,
                self._apply_patch(scale, document, media),
                dry_run=dry_run,
                field_manager=field_manager,
            )

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

    def token_request(
        self, rt: ResourceType, namespace: str | None, name: str, body: Any, auth: Any
    ) -> dict:
        """POST .../serviceaccounts/<name>/token: a TokenRequest answered with a bearer token for it."""
        ns = self._ns(rt, namespace)
        account = self._get_existing(rt, ns, name)
        spec = dict((body or {}).get("spec") or {})
        expiration = int(spec.get("expirationSeconds") or 3600)
        spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
        spec["expirationSeconds"] = expiration
        spec.setdefault("boundObjectRef", None)
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": meta_of(account).get("uid"),
                "creationTimestamp": self._timestamp(),
            },
            "spec": spec,
            "status": {
                "token": auth.issue_service_account_token(ns, name),
                "expirationTimestamp": now_rfc3339(self._time() + expiration),
            },
        }

    # -- delete --------------------------------------------------------------------------

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
                if not self._matches(obj, options, rt.storage_key):
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

    # -- internal helpers for the garbage collector and simulators ----------------------------

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
