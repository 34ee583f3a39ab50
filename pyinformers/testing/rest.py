"""The API semantics of the in-process server: what each verb does to the store.

:class:`RestApi` implements create (with ``generateName``), get, list (with
selectors, ``limit``/``continue`` paging at a fixed resourceVersion,
``resourceVersion``/``resourceVersionMatch``), update (optimistic concurrency
on ``metadata.resourceVersion``), patch, the ``/status`` subresource, delete
(finalizers, ``deletionTimestamp``, propagation policies, preconditions),
deletecollection, and the starting point of watches. It validates input and
raises :class:`~pyinformers.testing.status.StatusError` with the status code
and reason a real API server uses. It knows nothing of HTTP.

Rules it keeps (from the Kubernetes API conventions):

* the server owns ``uid``, ``creationTimestamp``, ``resourceVersion``,
  ``generation`` (1 on create, +1 when anything outside ``metadata`` -- and
  outside ``status`` for resources with a status subresource -- changes) and
  ``deletionTimestamp``;
* for resources with a status subresource, writes to the main resource keep
  the stored ``.status`` and writes to ``/status`` change only ``.status``;
* an update that changes nothing writes nothing (no new resourceVersion);
* an object with finalizers is only marked for deletion; it goes away when an
  update removes its last finalizer;
* namespaced writes need an existing, non-terminating namespace.

Thread-safety: every read-modify-write holds the store lock, so concurrent
requests serialise per write and conflicts are detected exactly.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import datetime
import random
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Optional

import orjson

from pyinformers.api import selectors
from pyinformers.testing.patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from pyinformers.testing.registry import Registry, ResourceType
from pyinformers.testing.status import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    expired,
    forbidden,
    invalid,
    not_found,
    success_status,
    unsupported_media_type,
)
from pyinformers.testing.storage import Store
from pyinformers.testing.watch import Watcher, WatchHub

__all__ = ["RestApi", "ListOptions", "WatchOptions", "now_rfc3339"]

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
NAMESPACE_FINALIZER = "kubernetes"
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what the real server uses for generateName suffixes
_SERVER_OWNED = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
_CONTINUE_VERSION = "meta.k8s.io/v1"


def now_rfc3339(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _copy(obj: Any) -> Any:
    """A deep copy of JSON data (objects are plain JSON, so a round trip is exact and fast)."""
    return orjson.loads(orjson.dumps(obj))


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


@dataclass(frozen=True)
class ListOptions:
    label_selector: Any = None
    field_selector: Any = None
    limit: int = 0
    continue_: Optional[str] = None
    resource_version: Optional[str] = None
    resource_version_match: Optional[str] = None


@dataclass(frozen=True)
class WatchOptions:
    label_selector: Any = None
    field_selector: Any = None
    resource_version: Optional[str] = None
    resource_version_match: Optional[str] = None
    allow_bookmarks: bool = False
    send_initial_events: Optional[bool] = None
    timeout_seconds: Optional[float] = None


def _bool(value: Optional[str], name: str) -> Optional[bool]:
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0", ""):
        return False
    raise bad_request(f"{name}: {value!r} is not a boolean")


def _parse_selectors(query: dict[str, str]) -> tuple[Any, Any]:
    label = field = None
    try:
        if query.get("labelSelector"):
            label = selectors.LabelSelector.parse(query["labelSelector"])
            if label.empty:
                label = None
        if query.get("fieldSelector"):
            field = selectors.FieldSelector.parse(query["fieldSelector"])
            if not str(field):
                field = None
    except ValueError as exc:
        raise bad_request(f"unable to parse selector: {exc}") from None
    return label, field


def _rv_param(value: Optional[str], name: str = "resourceVersion") -> Optional[int]:
    if value is None or value == "":
        return None
    try:
        rv = int(value)
    except ValueError:
        raise bad_request(f"{name}: invalid value {value!r}: must be an integer resourceVersion") from None
    if rv < 0:
        raise bad_request(f"{name}: invalid value {value!r}: must be non-negative")
    return rv


def parse_list_options(query: dict[str, str]) -> ListOptions:
    label, field = _parse_selectors(query)
    limit = 0
    if query.get("limit"):
        try:
            limit = int(query["limit"])
        except ValueError:
            raise bad_request(f"limit: {query['limit']!r} is not an integer") from None
        if limit < 0:
            raise bad_request("limit must not be negative")
    match = query.get("resourceVersionMatch") or None
    if match not in (None, "Exact", "NotOlderThan"):
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueNotSupported", "resourceVersionMatch", f"Unsupported value: {match!r}: supported values: \"Exact\", \"NotOlderThan\"")])
    rv = query.get("resourceVersion")
    if match and not rv:
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided")])
    if match == "Exact" and rv == "0":
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")])
    cont = query.get("continue") or None
    if cont and rv not in (None, "", "0"):
        raise bad_request("specifying resource version is not allowed when using continue")
    return ListOptions(label, field, limit, cont, rv or None, match)


def parse_watch_options(query: dict[str, str]) -> WatchOptions:
    label, field = _parse_selectors(query)
    timeout = None
    if query.get("timeoutSeconds"):
        try:
            timeout = float(query["timeoutSeconds"])
        except ValueError:
            raise bad_request(f"timeoutSeconds: {query['timeoutSeconds']!r} is not a number") from None
    send_initial = _bool(query.get("sendInitialEvents"), "sendInitialEvents")
    bookmarks = bool(_bool(query.get("allowWatchBookmarks"), "allowWatchBookmarks"))
    match = query.get("resourceVersionMatch") or None
    if send_initial is not None:
        problems = []
        if match != "NotOlderThan":
            problems.append(("FieldValueInvalid", "resourceVersionMatch", "sendInitialEvents requires resourceVersionMatch=NotOlderThan"))
        if send_initial and not bookmarks:
            problems.append(("FieldValueForbidden", "allowWatchBookmarks", "sendInitialEvents=true requires allowWatchBookmarks=true"))
        if problems:
            raise invalid("ListOptions", "meta.k8s.io", "", problems)
    elif match is not None:
        raise invalid("ListOptions", "meta.k8s.io", "", [("FieldValueForbidden", "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")])
    rv = query.get("resourceVersion") or None
    _rv_param(rv)
    return WatchOptions(label, field, rv, match, bookmarks, send_initial, timeout)


def _encode_continue(rv: int, start: str) -> str:
    token = orjson.dumps({"v": _CONTINUE_VERSION, "rv": rv, "start": start})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        if data.get("v") != _CONTINUE_VERSION or not isinstance(data.get("rv"), int) or not isinstance(data.get("start"), str):
            raise ValueError("unknown token layout")
        return data["rv"], data["start"]
    except (ValueError, binascii.Error, orjson.JSONDecodeError, AttributeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from None


class RestApi:
    """Verbs over the store (see the module docstring). Thread-safe."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        hub: WatchHub,
        *,
        time_func: Callable[[], float],
    ) -> None:
        self.store = store
        self.registry = registry
        self.hub = hub
        self._time = time_func
        self._random = random.Random()
        self._random_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<RestApi {self.store!r}>"

    # -- helpers ---------------------------------------------------------------------

    def _timestamp(self) -> str:
        return now_rfc3339(self._time())

    def _ns(self, rt: ResourceType, namespace: Optional[str]) -> str:
        return (namespace or "") if rt.namespaced else ""

    def _require_namespace(self, rt: ResourceType, namespace: Optional[str], *, for_create: bool) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise bad_request(f"{rt.plural} is namespaced: a namespace is required in the request path")
        ns = self.store.get("/namespaces", "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if for_create and _meta(ns).get("deletionTimestamp"):
            raise forbidden(
                f"unable to create new content in namespace {namespace} because it is being terminated",
                kind=rt.plural,
                group=rt.group,
            )

    def _get_existing(self, rt: ResourceType, namespace: str, name: str) -> dict:
        obj = self.store.get(rt.storage_key, namespace, name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def _out(self, rt: ResourceType, obj: dict) -> dict:
        """The object as seen through ``rt``'s version."""
        if obj.get("apiVersion") != rt.api_version:
            return dict(obj, apiVersion=rt.api_version)
        return obj

    def _check_body(self, rt: ResourceType, body: Any, namespace: str, name: Optional[str]) -> dict:
        if not isinstance(body, dict):
            raise bad_request(f"the body of the request must be a JSON object, not {type(body).__name__}")
        api_version = body.get("apiVersion")
        if api_version and api_version != rt.api_version:
            other_versions = {t.api_version for t in self.registry.types_for_storage_key(rt.storage_key)}
            if api_version not in other_versions:
                raise bad_request(
                    f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
                )
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        meta = body.get("metadata")
        if meta is None:
            meta = body["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be a JSON object")
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if name is not None and meta.get("name") and meta["name"] != name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        body["apiVersion"] = rt.api_version
        body["kind"] = rt.kind
        return body

    def _validate(self, rt: ResourceType, obj: dict) -> None:
        meta = obj["metadata"]
        name = meta.get("name") or ""
        causes = []
        if not isinstance(name, str) or not name:
            causes.append(("FieldValueRequired", "metadata.name", "name or generateName is required"))
        else:
            label_like = rt.storage_key in ("/namespaces", "/services")
            pattern, limit, what = (
                (_DNS_LABEL, 63, "RFC 1123 label") if label_like else (_DNS_SUBDOMAIN, 253, "RFC 1123 subdomain")
            )
            if len(name) > limit or not pattern.match(name):
                causes.append(
                    (
                        "FieldValueInvalid",
                        "metadata.name",
                        f"Invalid value: {name!r}: a lowercase {what} must consist of lower case alphanumeric "
                        f"characters, '-'{'' if label_like else ' or .'}, start and end with an alphanumeric "
                        f"character, and be at most {limit} characters",
                    )
                )
        labels = meta.get("labels")
        if labels is not None:
            if not isinstance(labels, dict):
                causes.append(("FieldValueInvalid", "metadata.labels", "labels must be a map of strings"))
            else:
                for key, value in labels.items():
                    if not isinstance(value, str):
                        causes.append(("FieldValueInvalid", f"metadata.labels[{key}]", "label values must be strings"))
                        continue
                    err = selectors.label_key_error(key) or selectors.label_value_error(value)
                    if err:
                        causes.append(("FieldValueInvalid", f"metadata.labels[{key}]", err))
        for field in ("annotations",):
            value = meta.get(field)
            if value is not None and (not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())):
                causes.append(("FieldValueInvalid", f"metadata.{field}", f"{field} must be a map of strings"))
        finalizers = meta.get("finalizers")
        if finalizers is not None and (not isinstance(finalizers, list) or not all(isinstance(f, str) and f for f in finalizers)):
            causes.append(("FieldValueInvalid", "metadata.finalizers", "finalizers must be a list of non-empty strings"))
        refs = meta.get("ownerReferences")
        if refs is not None:
            if not isinstance(refs, list):
                causes.append(("FieldValueInvalid", "metadata.ownerReferences", "ownerReferences must be a list"))
            else:
                controllers = 0
                for index, ref in enumerate(refs):
                    if not isinstance(ref, dict) or not all(ref.get(k) for k in ("apiVersion", "kind", "name", "uid")):
                        causes.append(("FieldValueRequired", f"metadata.ownerReferences[{index}]", "apiVersion, kind, name and uid are required"))
                    elif ref.get("controller"):
                        controllers += 1
                if controllers > 1:
                    causes.append(("FieldValueInvalid", "metadata.ownerReferences", "Only one reference can have Controller set to true"))
        if causes:
            raise invalid(rt.kind, rt.group, name if isinstance(name, str) else "", causes)

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
            500, "AlreadyExists", f"could not generate a unique name from generateName {prefix!r}; try again", retry_after=1
        )

    @staticmethod
    def _spec_part(rt: ResourceType, obj: dict) -> dict:
        skip = {"metadata", "apiVersion", "kind"}
        if rt.has_status:
            skip.add("status")
        return {k: v for k, v in obj.items() if k not in skip}

    @staticmethod
    def _same_content(a: dict, b: dict) -> bool:
        ma, mb = dict(_meta(a)), dict(_meta(b))
        for m in (ma, mb):
            m.pop("resourceVersion", None)
            m.pop("managedFields", None)
        return ma == mb and {k: v for k, v in a.items() if k != "metadata"} == {k: v for k, v in b.items() if k != "metadata"}

    # -- create --------------------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: Optional[str], body: Any) -> dict:
        """Create an object from ``body`` (which is consumed: completed and stored as is); returns it."""
        ns = self._ns(rt, namespace)
        obj = self._check_body(rt, body, ns, None)
        meta = obj["metadata"]
        for field in _SERVER_OWNED:
            meta.pop(field, None)
        meta.pop("resourceVersion", None)
        if rt.has_status and rt.storage_key not in ("/namespaces", "/nodes"):
            obj.pop("status", None)
        with self.store.lock:
            self._require_namespace(rt, ns, for_create=True)
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generate_name(rt, ns, meta["generateName"])
            self._validate(rt, obj)
            name = meta["name"]
            if self.store.get(rt.storage_key, ns, name) is not None:
                raise already_exists(rt.plural, rt.group, name)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self._timestamp()
            meta["generation"] = 1
            self._defaults_on_create(rt, obj)
            return self._out(rt, self.store.put(rt.storage_key, ns, name, obj))

    def _defaults_on_create(self, rt: ResourceType, obj: dict) -> None:
        if rt.storage_key == "/namespaces":
            obj.setdefault("spec", {}).setdefault("finalizers", [NAMESPACE_FINALIZER])
            obj["status"] = {"phase": "Active"}
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif rt.storage_key == "apiextensions.k8s.io/customresourcedefinitions":
            try:
                self.registry.install_crd(obj)
            except ValueError as exc:
                raise invalid(rt.kind, rt.group, obj["metadata"]["name"], [("FieldValueInvalid", "spec", str(exc))]) from None
            names = dict(obj["spec"].get("names") or {})
            names.setdefault("singular", names.get("kind", "").lower())
            names.setdefault("listKind", f"{names.get('kind', '')}List")
            ts = self._timestamp()
            obj["status"] = {
                "acceptedNames": names,
                "storedVersions": [v["name"] for v in obj["spec"]["versions"] if v.get("storage")] or [obj["spec"]["versions"][0]["name"]],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": ts},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": ts},
                ],
            }

    # -- reads -----------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: Optional[str], name: str) -> dict:
        return self._out(rt, self._get_existing(rt, self._ns(rt, namespace), name))

    def list(self, rt: ResourceType, namespace: Optional[str], options: ListOptions) -> dict:
        """A List object (one page of it when ``options.limit`` is set)."""
        ns = self._ns(rt, namespace) if namespace else None
        start = ""
        if options.continue_:
            at_rv, start = _decode_continue(options.continue_)
            if at_rv < self.store.compacted_rv:
                raise expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter, or use the continue token "
                    "in this response to retrieve the remainder of the results. Continuing with the "
                    "provided token results in an inconsistent list - objects that were created, modified, "
                    "or deleted between the time the first chunk was returned and now may show up in the list."
                )
        else:
            rv = _rv_param(options.resource_version)
            at_rv = rv if options.resource_version_match == "Exact" else None
            if rv and options.resource_version_match != "Exact" and rv > self.store.current_rv:
                self.store.snapshot(rt.storage_key, ns, at_rv=rv)  # raises "Too large resource version"
        snap = self.store.list_snapshot(rt.storage_key, ns, at_rv=at_rv)
        keys, objects, list_rv = snap.keys, snap.objects, snap.rv
        first = bisect.bisect_right(keys, start) if start else 0
        limit = options.limit
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if options.label_selector is None and options.field_selector is None:
            end = len(objects) if not limit else min(len(objects), first + limit)
            page = objects[first:end]
            if end < len(objects):
                metadata["continue"] = _encode_continue(list_rv, keys[end - 1])
                metadata["remainingItemCount"] = len(objects) - end
        else:
            # Filter only as far as this page needs: up to limit matches, plus one to know there are more.
            page = []
            last = first
            for i in range(first, len(objects)):
                obj = objects[i]
                if not self._matches(obj, options):
                    continue
                if limit and len(page) == limit:
                    metadata["continue"] = _encode_continue(list_rv, keys[last])
                    break
                page.append(obj)
                last = i
        items = [self._out(rt, o) for o in page]
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": metadata, "items": items}

    @staticmethod
    def _matches(obj: dict, options: Any) -> bool:
        if options.label_selector is not None and not options.label_selector.matches(_meta(obj).get("labels")):
            return False
        if options.field_selector is not None and not options.field_selector.matches(obj):
            return False
        return True

    def open_watch(
        self, rt: ResourceType, namespace: Optional[str], options: WatchOptions, *, max_queue: int
    ) -> tuple[Watcher, list[dict], int, bool]:
        """Register a watcher; returns (watcher, initial objects, start rv, send initial-events-end bookmark)."""
        ns = self._ns(rt, namespace) if namespace else None
        watcher = Watcher(rt, ns, label_selector=options.label_selector, field_selector=options.field_selector, max_queue=max_queue)
        rv = _rv_param(options.resource_version)
        if options.send_initial_events:
            objects, start = self.hub.open(watcher, since_rv=None, initial_state=True)
            if rv and rv > start:
                self.hub.close(watcher)
                self.store.snapshot(rt.storage_key, ns, at_rv=rv)  # raises "Too large resource version"
            return watcher, objects, start, True
        if rv is None or rv == 0:
            objects, start = self.hub.open(watcher, since_rv=None, initial_state=True)
            return watcher, objects, start, False
        _, start = self.hub.open(watcher, since_rv=rv, initial_state=False)
        return watcher, [], start, False

    # -- update / patch ------------------------------------------------------------------

    def update(self, rt: ResourceType, namespace: Optional[str], name: str, body: Any, *, subresource: Optional[str] = None) -> dict:
        """Replace an object (or its ``status``/``finalize`` subresource) with ``body`` (consumed)."""
        ns = self._ns(rt, namespace)
        obj = self._check_body(rt, body, ns, name)
        obj["metadata"]["name"] = name
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            return self._out(rt, self._apply_update(rt, ns, name, old, obj, subresource=subresource))

    def _apply_update(self, rt: ResourceType, ns: str, name: str, old: dict, new: dict, *, subresource: Optional[str]) -> dict:
        """Write ``new`` over ``old`` (store lock held). ``new`` is owned by this call."""
        expected = new["metadata"].get("resourceVersion")
        if expected and expected != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name, "the object has been modified; please apply your changes to the latest version and try again")
        old_meta = old["metadata"]
        if subresource == "status":
            if not rt.has_status:
                raise not_found(rt.plural, rt.group, name, message=f"{rt.plural} has no status subresource")
            status = new.get("status")
            new = dict(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            new["metadata"] = dict(old_meta)
        elif subresource == "finalize" and rt.storage_key == "/namespaces":
            spec = dict(old.get("spec") or {})
            spec["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
            new = dict(old, spec=spec)
            new["metadata"] = dict(old_meta)
        elif subresource:
            raise not_found(rt.plural, rt.group, name, message=f"the server could not find the subresource {subresource!r}")
        else:
            meta = new["metadata"]
            for field in _SERVER_OWNED:
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
            self._validate(rt, new)
            if old_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
                if added:
                    raise invalid(rt.kind, rt.group, name, [("FieldValueForbidden", "metadata.finalizers", f"no new finalizers can be added if the object is being deleted, found new finalizers {sorted(added)!r}")])
            if self._spec_part(rt, new) != self._spec_part(rt, old):
                meta["generation"] = int(old_meta.get("generation") or 1) + 1
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if self._same_content(new, old):
            return old
        stored = self.store.put(rt.storage_key, ns, name, new)
        if rt.storage_key == "apiextensions.k8s.io/customresourcedefinitions" and not subresource:
            try:
                self.registry.install_crd(stored)
            except ValueError:
                pass  # the previous versions stay served; a real server would reject the update up front
        return self._maybe_finish_deletion(rt, ns, name, stored)

    def _deletion_blocked(self, rt: ResourceType, obj: dict) -> bool:
        if _meta(obj).get("finalizers"):
            return True
        return rt.storage_key == "/namespaces" and bool((obj.get("spec") or {}).get("finalizers"))

    def _maybe_finish_deletion(self, rt: ResourceType, ns: str, name: str, obj: dict) -> dict:
        if _meta(obj).get("deletionTimestamp") and not self._deletion_blocked(rt, obj):
            return self._remove(rt, ns, name) or obj
        return obj

    def _remove(self, rt: ResourceType, ns: str, name: str) -> Optional[dict]:
        final = self.store.remove(rt.storage_key, ns, name)
        if final is not None and rt.storage_key == "apiextensions.k8s.io/customresourcedefinitions":
            for served in self.registry.uninstall_crd(name):
                for obj in self.store.objects(served.storage_key):
                    meta = _meta(obj)
                    self.store.remove(served.storage_key, meta.get("namespace") or "", meta["name"])
        return final

    def patch(
        self,
        rt: ResourceType,
        namespace: Optional[str],
        name: str,
        body: bytes,
        content_type: str,
        *,
        subresource: Optional[str] = None,
    ) -> dict:
        ns = self._ns(rt, namespace)
        media = (content_type or "").split(";")[0].strip().lower()
        if media == "application/apply-patch+yaml":
            raise unsupported_media_type("server-side apply is not supported by pyinformers.testing; use a merge patch or a JSON patch")
        if media == "application/strategic-merge-patch+json" and rt.is_custom:
            raise unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json"
            )
        if media not in ("application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"):
            raise unsupported_media_type(
                f"the body of the request was in an unknown format ({media or 'no Content-Type'}) - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"
            )
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"the patch is not valid JSON: {exc}") from None
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            try:
                if media == "application/json-patch+json":
                    patched = json_patch(old, document)
                else:
                    if not isinstance(document, dict):
                        raise PatchError("a merge patch must be a JSON object")
                    apply = merge_patch if media == "application/merge-patch+json" else strategic_merge_patch
                    patched = _copy(apply(old, document))
            except PatchError as exc:
                raise invalid(rt.kind, rt.group, name, [("FieldValueInvalid", "", f"the patch cannot be applied: {exc}")]) from None
            if not isinstance(patched, dict):
                raise invalid(rt.kind, rt.group, name, [("FieldValueInvalid", "", "the patched document is not an object")])
            patched = self._check_body(rt, patched, ns, name)
            if patched["metadata"].get("name") != name:
                raise bad_request("a patch cannot change metadata.name")
            return self._out(rt, self._apply_update(rt, ns, name, old, patched, subresource=subresource))

    # -- delete --------------------------------------------------------------------------

    def delete(self, rt: ResourceType, namespace: Optional[str], name: str, options: dict) -> tuple[int, dict]:
        """Delete or mark for deletion; returns (HTTP status, body): 200 + Status when gone, 202 + object when pending."""
        ns = self._ns(rt, namespace)
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy is not None and policy not in PROPAGATION_POLICIES:
            raise invalid("DeleteOptions", "meta.k8s.io", name, [("FieldValueNotSupported", "propagationPolicy", f"Unsupported value: {policy!r}: supported values: \"Orphan\", \"Background\", \"Foreground\"")])
        preconditions = options.get("preconditions") or {}
        with self.store.lock:
            obj = self._get_existing(rt, ns, name)
            meta = obj["metadata"]
            if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                raise conflict(rt.plural, rt.group, name, f"Precondition failed: UID in precondition: {preconditions['uid']}, UID in object meta: {meta.get('uid')}")
            if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != meta.get("resourceVersion"):
                raise conflict(rt.plural, rt.group, name, f"Precondition failed: ResourceVersion in precondition: {preconditions['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}")
            finalizers = list(meta.get("finalizers") or ())
            extra = {"Orphan": ORPHAN_FINALIZER, "Foreground": FOREGROUND_FINALIZER}.get(policy or "")
            if extra and extra not in finalizers:
                if extra == ORPHAN_FINALIZER or self.store.dependents(meta.get("uid", "")) or finalizers:
                    finalizers.append(extra)
            if policy == "Background" and ORPHAN_FINALIZER in finalizers and not meta.get("deletionTimestamp"):
                finalizers.remove(ORPHAN_FINALIZER)
            pending = finalizers or self._deletion_blocked(rt, obj)
            if not pending:
                final = self._remove(rt, ns, name) or obj
                details = {"name": name, "kind": rt.plural, "uid": _meta(final).get("uid")}
                if rt.group:
                    details["group"] = rt.group
                return 200, success_status(details=details)
            if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or ()):
                return 202, self._out(rt, obj)
            new = dict(obj)
            new_meta = dict(meta, finalizers=finalizers)
            if not finalizers:
                new_meta.pop("finalizers")
            if not meta.get("deletionTimestamp"):
                new_meta["deletionTimestamp"] = self._timestamp()
                new_meta["deletionGracePeriodSeconds"] = 0
                new_meta["generation"] = int(meta.get("generation") or 1) + 1
            new["metadata"] = new_meta
            if rt.storage_key == "/namespaces":
                new["status"] = dict(obj.get("status") or {}, phase="Terminating")
            stored = self.store.put(rt.storage_key, ns, name, new)
            return 202, self._out(rt, stored)

    def delete_collection(self, rt: ResourceType, namespace: Optional[str], options: ListOptions, delete_options: dict) -> dict:
        """Delete every matching object; returns the List of what was deleted or marked."""
        ns = self._ns(rt, namespace) if namespace else None
        with self.store.lock:
            objects, rv = self.store.snapshot(rt.storage_key, ns)
            deleted = []
            for obj in objects:
                if not self._matches(obj, options):
                    continue
                meta = obj["metadata"]
                try:
                    code, result = self.delete(rt, meta.get("namespace"), meta["name"], delete_options)
                except StatusError as exc:
                    if exc.code == 404:
                        continue
                    raise
                deleted.append(self._out(rt, result if code == 202 else obj))
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {"resourceVersion": str(self.store.current_rv)}, "items": deleted}

    # -- internal helpers for the garbage collector and simulators ----------------------------

    def remove_finalizer(self, rt: ResourceType, ns: str, name: str, finalizer: str, *, spec: bool = False) -> None:
        """Drop one finalizer (from ``metadata`` or, for namespaces, ``spec``); finishes a pending deletion."""
        with self.store.lock:
            obj = self.store.get(rt.storage_key, ns, name)
            if obj is None:
                return
            if spec:
                current = list((obj.get("spec") or {}).get("finalizers") or ())
            else:
                current = list(_meta(obj).get("finalizers") or ())
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
            stored = self.store.put(rt.storage_key, ns, name, new)
            self._maybe_finish_deletion(rt, ns, name, stored)

    def set_owner_references(self, rt: ResourceType, ns: str, name: str, refs: list[dict]) -> None:
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
                self.store.put(rt.storage_key, ns, name, dict(obj, status=status, metadata=dict(obj["metadata"])))
            return True
