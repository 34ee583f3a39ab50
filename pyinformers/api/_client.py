"""List, watch and write one resource through the official client's ``ApiClient``, on plain dicts.

:class:`ResourceClient` is the only place in pyinformers that speaks HTTP. It
sends every request through the user's ``kubernetes.client.ApiClient``, so
kubeconfig contexts, in-cluster config, bearer tokens (refreshed by the
client's ``refresh_api_key_hook``, which is how exec plugins and token files
renew), client certificates, proxies and TLS settings all apply exactly as
the user configured them. What it does *not* use is the generated model
layer: responses are decoded once with ``orjson`` straight into dicts.

The one dependency on the generated client's shape is
:func:`pyinformers.api._transport.send` (the ``call_api`` adapter).

Watches. :meth:`ResourceClient.watch` returns a
:class:`~pyinformers.api._watch.WatchStream` (see :mod:`pyinformers.api._watch`).

Retries. Requests go out under the ``ApiClient``'s own urllib3 retry policy
(``configuration.retries``). With the default (None: urllib3's ``Retry(3)``)
urllib3 itself retries a GET answered 429 or 503 *with* a ``Retry-After``
header up to three times, sleeping that long in the request, before the typed
error reaches the caller; set ``configuration.retries = False`` to see every
answer at once (the reflector backs off on its own clock either way).

Writes are reported. Every write the server accepts is told, with the
answer, to the listener of the calling thread's context, if any
(:mod:`pyinformers.api._observe`): that is how a controller learns what
its reconcile wrote, to read its own writes (one ``ContextVar`` lookup per
write when nobody listens).

Thread-safety: a :class:`ResourceClient` holds no mutable state and may be
shared by any number of threads (the underlying urllib3 pool is thread-safe).
A :class:`WatchStream` is iterated by one thread; ``close()`` is safe from any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

import orjson

from pyinformers.api._errors import ApiError
from pyinformers.api._metadata import (
    ACCEPT_PARTIAL_OBJECT_METADATA,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
    MetadataNotServed,
)
from pyinformers.api._observe import notify_write
from pyinformers.api._resource import ObjectT, Resource
from pyinformers.api._selectors import as_field_selector, as_label_selector
from pyinformers.api._transport import (
    CONNECT_TIMEOUT,
    enable_keepalive,
    raise_for_status,
    read_json,
    send,
    set_read_timeout,
)
from pyinformers.api._watch import WatchStream

__all__ = ["ListPage", "ResourceClient", "PATCH_CONTENT_TYPES", "Selector", "selector_query"]

#: ``patch_type`` -> Content-Type of the PATCH request.
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}

#: HTTP method of a write -> the verb :func:`~pyinformers.api._observe.notify_write` reports.
_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

#: Extra read slack on a watch beyond its server-side ``timeoutSeconds``.
WATCH_READ_SLACK = 60.0

#: Seconds a watch request waits for the answer's status line and headers. kube-apiserver
#: sends them at once (a streaming list may first wait up to a few seconds for a fresh
#: watch cache), so a request unanswered this long went into a stalled connection: it
#: fails and the reflector re-watches, instead of waiting out the stream's read timeout
#: (the stall timeout only watches a stream that has started).
WATCH_HEADER_TIMEOUT = 30.0

Selector = str | Mapping[str, str] | Any | None


@dataclass(frozen=True)
class ListPage(Generic[ObjectT]):
    """One page of a list: ``items`` (dicts with ``apiVersion``/``kind`` set), the
    list's ``resource_version``, the ``continue_`` token for the next page (None on
    the last page) and the server's ``remaining_item_count`` estimate, if given."""

    items: list[ObjectT]
    resource_version: str
    continue_: str | None = None
    remaining_item_count: int | None = None

    def __repr__(self) -> str:
        return (
            f"ListPage(items={len(self.items)}, resource_version={self.resource_version!r}, "
            f"continue_={'...' if self.continue_ else None}, remaining_item_count={self.remaining_item_count})"
        )


def selector_query(value: Selector, kind: str) -> str | None:
    """A selector argument as the query string the server wants (None: no selector)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        if kind == "field":
            value = as_field_selector(value)
        elif set(value) <= {"matchLabels", "matchExpressions"}:
            value = as_label_selector(value)  # the LabelSelector object form
        else:
            value = as_label_selector(
                {"matchLabels": value}
            )  # {"app": "web"}: equality on each pair
    text = str(value)
    return text or None


def selectors_query(label_selector: Selector, field_selector: Selector) -> list[tuple[str, Any]]:
    """The ``labelSelector`` / ``fieldSelector`` query parameters of a list or watch (empty ones left out)."""
    query: list[tuple[str, Any]] = []
    label = selector_query(label_selector, "label")
    field = selector_query(field_selector, "field")
    if label:
        query.append(("labelSelector", label))
    if field:
        query.append(("fieldSelector", field))
    return query


class ResourceClient(Generic[ObjectT]):
    """List, watch, read and write one :class:`Resource` on dicts, through ``api_client``.

    ``request_timeout`` is the per-read timeout (seconds) of non-watch requests;
    a watch reads without one beyond its server timeout (plus slack), because a
    healthy watch can be quiet for minutes.

    Every method raises a typed :class:`~pyinformers.api._errors.ApiError` when
    the server answers with an error; network failures propagate as the
    underlying urllib3/OSError exceptions. Thread-safe, stateless.

    Generic in the resource's object type, for type checkers only:
    ``ResourceClient(api, PODS)`` is a ``ResourceClient[Pod]``, whose reads and
    writes return ``Pod`` s (the same dicts at run time). ``list`` pages are
    ``ListPage[Any]``, since ``metadata_only`` turns their items into
    ``PartialObjectMetadata``; ``list_all`` pages hold the resource's type.
    """

    def __init__(
        self,
        api_client: Any,
        resource: Resource[ObjectT],
        *,
        request_timeout: float | None = 60.0,
        field_manager: str | None = None,
    ) -> None:
        if not isinstance(resource, Resource):
            raise TypeError(f"resource must be a Resource, got {type(resource).__name__}")
        self._api_client = api_client
        self._resource = resource
        self._request_timeout = request_timeout
        self._field_manager = field_manager

    @property
    def field_manager(self) -> str | None:
        """The field manager :meth:`apply` uses when none is passed (None: it must be passed)."""
        return self._field_manager

    @property
    def resource(self) -> Resource[ObjectT]:
        return self._resource

    @property
    def api_client(self) -> Any:
        return self._api_client

    # -- helpers -----------------------------------------------------------------------
    def _timeout(self, timeout: float | None) -> Any:
        read = timeout if timeout is not None else self._request_timeout
        return (CONNECT_TIMEOUT, read) if read is not None else (CONNECT_TIMEOUT, None)

    def _collection_namespace(self, namespace: str | None) -> str | None:
        if namespace is not None and not self._resource.namespaced:
            raise ValueError(
                f"{self._resource} is cluster-scoped: no namespace allowed (got {namespace!r})"
            )
        return namespace

    def _object_namespace(
        self, namespace: str | None, obj: Mapping[str, Any] | None = None
    ) -> str | None:
        """The namespace of one object: required for namespaced resources, forbidden otherwise."""
        if namespace is None and obj is not None:
            namespace = (obj.get("metadata") or {}).get("namespace")
        if self._resource.namespaced:
            if not namespace:
                raise ValueError(f"{self._resource} is namespaced: a namespace is required")
            return namespace
        if namespace and obj is None:
            raise ValueError(
                f"{self._resource} is cluster-scoped: no namespace allowed (got {namespace!r})"
            )
        return None

    def _object_path(self, namespace: str | None, name: Any, subresource: str | None = None) -> str:
        """The path of one object. Raises ValueError, naming the argument, before any request.

        ``name`` is required, and neither it nor the namespace may be ``.``,
        ``..`` or contain ``/`` or ``%`` (see :meth:`Resource.path`): such a
        name would address another object, or a whole namespace.
        """
        if name is None:
            raise ValueError(f"name is required to address one {self._resource.kind}")
        return self._resource.path(self._object_namespace(namespace), name, subresource)

    @staticmethod
    def _name_of(obj: Mapping[str, Any]) -> str:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("the object has no metadata.name")
        return name

    def _fill_type(self, items: list) -> list:
        kind = self._resource.kind
        api_version = self._resource.api_version
        for item in items:
            if "kind" not in item:
                item["kind"] = kind
            if "apiVersion" not in item:
                item["apiVersion"] = api_version
        return items

    def _metadata_not_served(self, answer: str) -> MetadataNotServed:
        return MetadataNotServed(
            f"the server does not serve {self._resource} as PartialObjectMetadata (asked for metadata only, it {answer}):"
            " metadata-only informers need a server that serves the meta.k8s.io negotiation (kube-apiserver 1.15+)"
        )

    def _object(
        self, method: str, path: str, query: Sequence[tuple[str, Any]] = (), **kwargs: Any
    ) -> Any:
        response = send(
            self._api_client, method, path, query, timeout=self._timeout(None), **kwargs
        )
        answer = read_json(response)
        verb = _WRITE_VERBS.get(method)
        if verb is not None:  # an accepted write: the reconcile on this thread may want to know
            notify_write(self._resource, verb, answer)
        return answer

    # -- reads -------------------------------------------------------------------------
    def list(
        self,
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        timeout: float | None = None,
        metadata_only: bool = False,
    ) -> ListPage[Any]:
        """One page of the collection (all namespaces when ``namespace`` is None).

        Raises :class:`~pyinformers.api._errors.Gone` when ``continue_`` expired.
        ``metadata_only``: the items as ``PartialObjectMetadata`` (see
        :mod:`pyinformers.api._metadata`); :class:`~pyinformers.api.MetadataNotServed`
        when the server answers with anything else.
        """
        query = selectors_query(label_selector, field_selector)
        if limit is not None:
            if limit <= 0:
                raise ValueError(f"limit must be positive, got {limit}")
            query.append(("limit", int(limit)))
        if continue_:
            query.append(("continue", continue_))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if resource_version_match is not None:
            query.append(("resourceVersionMatch", resource_version_match))
        path = self._resource.path(self._collection_namespace(namespace))
        headers = {"Accept": ACCEPT_PARTIAL_OBJECT_METADATA_LIST} if metadata_only else None
        try:
            body = read_json(
                send(
                    self._api_client,
                    "GET",
                    path,
                    query,
                    headers=headers,
                    timeout=self._timeout(timeout),
                )
            )
        except ApiError as error:
            if metadata_only and error.code == 406:
                raise self._metadata_not_served(f"answered 406 Not Acceptable ({error})") from None
            raise
        if not isinstance(body, dict):
            raise ValueError(f"list {path}: expected a JSON object, got {type(body).__name__}")
        metadata = body.get("metadata") or {}
        items = body.get("items") or []
        if metadata_only and body.get("kind") != "PartialObjectMetadataList":
            raise self._metadata_not_served(f"answered a {body.get('kind')!r}")
        return ListPage(
            items=items if metadata_only else self._fill_type(items),
            resource_version=metadata.get("resourceVersion") or "",
            continue_=metadata.get("continue") or None,
            remaining_item_count=metadata.get("remainingItemCount"),
        )

    def list_all(
        self,
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
        page_size: int = 500,
        timeout: float | None = None,
    ) -> ListPage[ObjectT]:
        """Every page of the collection, as one :class:`ListPage` (consistent snapshot).

        The resourceVersion is the first page's (the snapshot all pages come
        from). A continue token that expires mid-way raises Gone: start again.
        """
        items: list = []
        first_rv: str | None = None
        token: str | None = None
        while True:
            page = self.list(
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_=token,
                timeout=timeout,
            )
            items.extend(page.items)
            if first_rv is None:
                first_rv = page.resource_version
            token = page.continue_
            if not token:
                return ListPage(items=items, resource_version=first_rv or page.resource_version)

    def watch(
        self,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
    ) -> WatchStream:
        """Open a watch and return its :class:`WatchStream` (the caller closes it).

        An error answer to the request itself (e.g. 410 for a compacted
        ``resource_version``) raises here; one sent inside the stream raises
        from iteration. ``send_initial_events`` asks for a streaming list (the
        server sends the current objects as ADDED, then a BOOKMARK annotated
        ``k8s.io/initial-events-end``); it implies ``resource_version_match=
        "NotOlderThan"`` and bookmarks, as the API requires. ``metadata_only``:
        events carry ``PartialObjectMetadata`` objects (a streaming list's too);
        :class:`~pyinformers.api.MetadataNotServed` from iteration when an
        event carries anything else.
        """
        query = [("watch", "true"), *selectors_query(label_selector, field_selector)]
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if send_initial_events:
            allow_bookmarks = True
            query.append(("sendInitialEvents", "true"))
            resource_version_match = resource_version_match or "NotOlderThan"
        if resource_version_match is not None:
            query.append(("resourceVersionMatch", resource_version_match))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        read_timeout: float | None = None
        if timeout_seconds is not None:
            if timeout_seconds <= 0:
                raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
            query.append(("timeoutSeconds", int(timeout_seconds)))
            read_timeout = float(timeout_seconds) + WATCH_READ_SLACK
        path = self._resource.path(self._collection_namespace(namespace))
        header_timeout = (
            WATCH_HEADER_TIMEOUT
            if read_timeout is None
            else min(WATCH_HEADER_TIMEOUT, read_timeout)
        )
        headers = {"Accept": ACCEPT_PARTIAL_OBJECT_METADATA} if metadata_only else None
        response = send(
            self._api_client,
            "GET",
            path,
            query,
            headers=headers,
            timeout=(CONNECT_TIMEOUT, header_timeout),
        )
        try:
            raise_for_status(response)
        except ApiError as error:
            if metadata_only and error.code == 406:
                raise self._metadata_not_served(f"answered 406 Not Acceptable ({error})") from None
            raise
        set_read_timeout(response, read_timeout)  # the stream: timeoutSeconds + slack, or none
        enable_keepalive(response)  # a vanished peer fails the read in about a minute
        if metadata_only:
            return WatchStream(
                response,
                None,
                expect_kind="PartialObjectMetadata",
                not_served=self._metadata_not_served,
            )
        return WatchStream(response, self._resource)

    def get(self, name: str, namespace: str | None = None) -> ObjectT:
        """The object ``name`` (in ``namespace`` for namespaced resources); NotFound if absent."""
        path = self._object_path(namespace, name)
        return self._fill_type([self._object("GET", path)])[0]

    # -- writes ------------------------------------------------------------------------
    def create(self, obj: Mapping[str, Any], namespace: str | None = None) -> ObjectT:
        """Create ``obj`` (namespace from the argument or ``obj.metadata.namespace``); returns the stored object."""
        ns = self._object_namespace(namespace, obj)
        body = dict(obj)
        body.setdefault("apiVersion", self._resource.api_version)
        body.setdefault("kind", self._resource.kind)
        return self._object(
            "POST", self._resource.path(ns), body=body, headers={"Content-Type": "application/json"}
        )

    def replace(self, obj: Mapping[str, Any]) -> ObjectT:
        """PUT ``obj`` over the stored one; Conflict if its resourceVersion is stale."""
        ns = self._object_namespace(None, obj)
        path = self._resource.path(ns, self._name_of(obj))
        return self._object(
            "PUT", path, body=self._with_type(obj), headers={"Content-Type": "application/json"}
        )

    def replace_status(self, obj: Mapping[str, Any]) -> ObjectT:
        """PUT ``obj`` to the ``status`` subresource (only its status is written)."""
        ns = self._object_namespace(None, obj)
        path = self._resource.path(ns, self._name_of(obj), "status")
        return self._object(
            "PUT", path, body=self._with_type(obj), headers={"Content-Type": "application/json"}
        )

    def patch(
        self,
        name: str,
        body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> ObjectT:
        """Patch the object ``name``.

        ``patch_type``: ``"merge"`` (RFC 7386 JSON merge patch, a dict),
        ``"json"`` (RFC 6902 JSON patch, a list of operations), ``"strategic"``
        (strategic merge patch, built-in types only) or ``"apply"`` (server-side
        apply; needs ``field_manager``; ``force`` takes over conflicting fields).
        """
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(
                f"patch_type must be one of {', '.join(PATCH_CONTENT_TYPES)}, got {patch_type!r}"
            ) from None
        if patch_type == "json":
            if not isinstance(body, (list, tuple)):
                raise ValueError("a JSON patch is a list of operations")
            body = [dict(op) for op in body]
        elif not isinstance(body, Mapping):
            raise ValueError(f"a {patch_type} patch is an object (dict)")
        query: list[tuple[str, Any]] = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        payload: Any = body
        if patch_type == "apply":
            if not field_manager:
                raise ValueError("server-side apply needs a field_manager")
            if force:
                query.append(("force", "true"))
            # JSON is YAML; the official client serialises only *json bodies itself
            payload = orjson.dumps(dict(body))  # type: ignore[arg-type]  # a Mapping (checked above)
        path = self._object_path(namespace, name, subresource)
        return self._object(
            "PATCH", path, query, body=payload, headers={"Content-Type": content_type}
        )

    def apply(
        self,
        obj: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict:
        """Server-side apply ``obj`` (a partial object: the fields you manage); returns the stored object.

        Creates the object when it does not exist. ``field_manager`` defaults to
        the client's (a controller's clients use the controller's name); without
        one this raises ValueError, as the server would answer 422. A conflict with
        another manager's fields raises :class:`~pyinformers.api.ApplyConflict`
        unless ``force`` takes them over; ``dry_run`` stores nothing.
        See docs/server-side-apply.rst.
        """
        return self._apply(obj, None, field_manager=field_manager, force=force, dry_run=dry_run)

    def apply_status(
        self,
        obj: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict:
        """Server-side apply ``obj``'s ``status`` through the ``status`` subresource (as :meth:`apply`)."""
        return self._apply(obj, "status", field_manager=field_manager, force=force, dry_run=dry_run)

    def _apply(
        self,
        obj: Mapping[str, Any],
        subresource: str | None,
        *,
        field_manager: str | None,
        force: bool,
        dry_run: bool,
    ) -> dict:
        if not isinstance(obj, Mapping):
            raise TypeError(f"apply takes the object to apply (a dict), got {type(obj).__name__}")
        manager = field_manager or self._field_manager
        if not manager:
            raise ValueError(
                "server-side apply needs a field manager: pass field_manager=... "
                "(or make the client with one: ResourceClient(..., field_manager=...))"
            )
        query: list[tuple[str, Any]] = [("fieldManager", manager)]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        ns = self._object_namespace(None, obj)
        path = self._resource.path(ns, self._name_of(obj), subresource)
        body = orjson.dumps(self._with_type(obj))
        return self._object(
            "PATCH", path, query, body=body, headers={"Content-Type": PATCH_CONTENT_TYPES["apply"]}
        )

    def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict:
        """Delete the object ``name``; returns what the server answered (the object or a Status).

        ``propagation_policy``: ``"Foreground"``, ``"Background"`` or ``"Orphan"``.
        ``preconditions``: ``{"uid": ..., "resourceVersion": ...}`` (Conflict when they fail).
        """
        if propagation_policy is not None and propagation_policy not in (
            "Foreground",
            "Background",
            "Orphan",
        ):
            raise ValueError(
                f"propagation_policy must be Foreground, Background or Orphan, got {propagation_policy!r}"
            )
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = int(grace_period_seconds)
        if preconditions:
            options["preconditions"] = dict(preconditions)
        path = self._object_path(namespace, name)
        return self._object(
            "DELETE", path, body=options, headers={"Content-Type": "application/json"}
        )

    def _with_type(self, obj: Mapping[str, Any]) -> dict:
        body = dict(obj)
        body.setdefault("apiVersion", self._resource.api_version)
        body.setdefault("kind", self._resource.kind)
        return body

    def __repr__(self) -> str:
        host = getattr(getattr(self._api_client, "configuration", None), "host", "?")
        return f"<ResourceClient {self._resource} at {host}>"
