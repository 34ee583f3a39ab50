"""List, watch and write one resource through the official client's ``ApiClient``, on plain dicts.

:class:`ResourceClient` is the only place in pyinformers that speaks HTTP. It
sends every request through the user's ``kubernetes.client.ApiClient``, so
kubeconfig contexts, in-cluster config, bearer tokens (refreshed by the
client's ``refresh_api_key_hook``, which is how exec plugins and token files
renew), client certificates, proxies and TLS settings all apply exactly as
the user configured them. What it does *not* use is the generated model
layer: responses are decoded once with ``orjson`` straight into dicts.

The one dependency on the generated client's shape is :func:`_send`: it uses
the public request path of the 37 line (``param_serialize`` then
``call_api``), and falls back to the older single ``call_api(...)`` signature
(the 36 line and before) when ``param_serialize`` is missing. Everything
after it is plain ``urllib3``.

Watches. :meth:`ResourceClient.watch` returns a :class:`WatchStream`: an
iterator of :class:`WatchEvent` read from the chunked response line by line.
Each line is decoded exactly once (no re-encoding); an ``ERROR`` event raises
the typed :class:`~pyinformers.api.errors.ApiError`. :meth:`WatchStream.close`
may be called from any thread: it shuts the socket down for reading
(``urllib3.HTTPResponse.shutdown()``, public since urllib3 2.3; for older
urllib3 the socket of ``HTTPResponse.connection``), which makes a reader
blocked in ``recv`` return at once; the reader then ends its iteration
quietly and the connection is closed and handed back to the pool.

Retries. Requests go out under the ``ApiClient``'s own urllib3 retry policy
(``configuration.retries``). With the default (None: urllib3's ``Retry(3)``)
urllib3 itself retries a GET answered 429 or 503 *with* a ``Retry-After``
header up to three times, sleeping that long in the request, before the typed
error reaches the caller; set ``configuration.retries = False`` to see every
answer at once (the reflector backs off on its own clock either way).

Thread-safety: a :class:`ResourceClient` holds no mutable state and may be
shared by any number of threads (the underlying urllib3 pool is thread-safe).
A :class:`WatchStream` is iterated by one thread; ``close()`` is safe from any.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Protocol, Sequence, Union, runtime_checkable

import orjson

from pyinformers.api.errors import ApiError, error_from_status
from pyinformers.api.resource import Resource
from pyinformers.api.selectors import as_field_selector, as_label_selector

__all__ = [
    "ListPage",
    "WatchEvent",
    "WatchStream",
    "ResourceClient",
    "ListerWatcher",
    "ListWatch",
    "WatchEventType",
    "PATCH_CONTENT_TYPES",
]


class WatchEventType:
    """The ``type`` strings of watch events (plain ``str`` constants: events are compared often)."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


#: ``patch_type`` -> Content-Type of the PATCH request.
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}

#: Seconds to establish a connection before giving up (every request).
CONNECT_TIMEOUT = 30.0
#: Extra read slack on a watch beyond its server-side ``timeoutSeconds``.
WATCH_READ_SLACK = 60.0
_READ_SIZE = 64 * 1024

Selector = Union[str, Mapping[str, str], Any, None]


@dataclass(frozen=True)
class ListPage:
    """One page of a list: ``items`` (dicts with ``apiVersion``/``kind`` set), the
    list's ``resource_version``, the ``continue_`` token for the next page (None on
    the last page) and the server's ``remaining_item_count`` estimate, if given."""

    items: list
    resource_version: str
    continue_: Optional[str] = None
    remaining_item_count: Optional[int] = None

    def __repr__(self) -> str:
        return (
            f"ListPage(items={len(self.items)}, resource_version={self.resource_version!r}, "
            f"continue_={'...' if self.continue_ else None}, remaining_item_count={self.remaining_item_count})"
        )


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the decoded object.

    The object is the server's, shared with whoever keeps it: do not mutate it.
    """

    type: str
    object: dict

    def __repr__(self) -> str:
        md = self.object.get("metadata") or {}
        return f"WatchEvent({self.type}, {md.get('namespace') or ''}/{md.get('name') or ''} rv={md.get('resourceVersion')})"


# --------------------------------------------------------------------------- transport


def _send(
    api_client: Any,
    method: str,
    path: str,
    query: Sequence[tuple[str, Any]] = (),
    *,
    headers: Optional[dict] = None,
    body: Any = None,
    timeout: Any = None,
) -> Any:
    """Send one request through ``api_client`` and return the raw ``urllib3`` response.

    The body is not read (``preload_content=False``): the caller reads or streams
    it and releases the connection. Status codes are not checked here.
    """
    header_params = {"Accept": "application/json"}
    if headers:
        header_params.update(headers)
    query_params = list(query)
    serialize = getattr(api_client, "param_serialize", None)
    if serialize is not None:  # kubernetes >= 37 (and the generator line it comes from)
        request = serialize(
            method=method,
            resource_path=path,
            query_params=query_params,
            header_params=header_params,
            body=body,
            auth_settings=["BearerToken"],
        )
        return api_client.call_api(*request, _request_timeout=timeout).response
    # kubernetes <= 36: one call_api with the legacy keyword options.
    return api_client.call_api(  # pragma: no cover - exercised only with an old client installed
        path,
        method,
        path_params={},
        query_params=query_params,
        header_params=header_params,
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=timeout,
    )


def _release(response: Any, *, reusable: bool) -> None:
    """Give the connection back to the pool; close it first unless it is clean for reuse."""
    try:
        if not reusable:
            response.close()
        response.release_conn()
    except Exception:  # already closed or released: nothing left to give back
        pass


def _shutdown(response: Any) -> None:
    """Make a thread blocked reading ``response`` return now (EOF), from any thread."""
    shutdown = getattr(response, "shutdown", None)
    if shutdown is not None:  # urllib3 >= 2.3
        try:
            shutdown()
            return
        except (ValueError, RuntimeError, OSError):
            pass  # not available on this response (or already released): try the socket
    connection = getattr(response, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _raise_for_status(response: Any) -> None:
    """Raise the typed ApiError for a non-2xx response (reading and releasing its body)."""
    status = response.status
    if 200 <= status < 300:
        return
    try:
        data = response.read()
    finally:
        _release(response, reusable=False)
    body: Any = None
    if data:
        try:
            body = orjson.loads(data)
        except orjson.JSONDecodeError:
            body = None
    if not isinstance(body, dict) or body.get("kind") not in (None, "Status"):
        text = data.decode("utf-8", "replace")[:500] if data else ""
        body = {"message": text or getattr(response, "reason", "") or ""}
    raise error_from_status(body, status, headers=response.headers)


def _read_json(response: Any) -> Any:
    _raise_for_status(response)
    try:
        data = response.read()
    finally:
        _release(response, reusable=True)
    return orjson.loads(data) if data else None


def _selector(value: Selector, kind: str) -> Optional[str]:
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
            value = as_label_selector({"matchLabels": value})  # {"app": "web"}: equality on each pair
    text = str(value)
    return text or None


# --------------------------------------------------------------------------- watch stream


class WatchStream:
    """An iterator of :class:`WatchEvent` over one open watch response.

    Invariants: each line of the body is decoded exactly once; iteration ends
    (StopIteration) when the server closes the stream or :meth:`close` was
    called; an ``ERROR`` event raises its typed ApiError (and ends the stream);
    a broken connection raises the urllib3/OSError exception, unless the stream
    was closed, in which case iteration just ends.

    One thread iterates; :meth:`close` may be called from any thread, any
    number of times, before, during or after iteration.
    """

    def __init__(self, response: Any, resource: Optional[Resource] = None) -> None:
        self._response = response
        self._resource = resource
        self._lock = threading.Lock()
        self._closed = False  # set once by close(); read by the iterating thread
        self._reading = False  # True while a thread is inside __iter__'s generator
        self._released = False  # the connection went back to the pool (exactly once)
        self._events = 0
        self._iterator: Optional[Iterator[WatchEvent]] = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called or the stream ended."""
        return self._closed

    @property
    def events(self) -> int:
        """How many events this stream has produced so far."""
        return self._events

    def close(self) -> None:
        """Stop the stream. Safe from any thread; a blocked reader returns promptly."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        _shutdown(self._response)
        if not reading:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        _release(self._response, reusable=False)

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._iterator is None:
            self._iterator = self._generate()
        return self._iterator

    def __next__(self) -> WatchEvent:
        return next(iter(self))

    def __enter__(self) -> "WatchStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _chunks(self) -> Iterator[bytes]:
        response = self._response
        if getattr(response, "chunked", False) and response.supports_chunked_reads():
            # One HTTP chunk per iteration, as soon as it is complete.
            yield from response.read_chunked(None, decode_content=True)
            return
        read1 = getattr(response, "read1", None)
        while True:  # not chunked (a proxy re-framed it, or HTTP/1.0): read what is there
            data = read1(_READ_SIZE) if read1 is not None else response.read(_READ_SIZE)
            if not data:
                return
            yield data

    def _generate(self) -> Iterator[WatchEvent]:
        with self._lock:
            if self._closed:
                return  # closed before the first read: close() already released the connection
            self._reading = True
        clean = False
        loads = orjson.loads
        kind = self._resource.kind if self._resource is not None else None
        api_version = self._resource.api_version if self._resource is not None else None
        try:
            pending = b""
            for chunk in self._chunks():
                if self._closed:
                    return
                if b"\n" not in chunk:
                    pending += chunk
                    continue
                if pending:
                    chunk = pending + chunk
                lines = chunk.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line or line.isspace():
                        continue
                    raw = loads(line)
                    etype = raw["type"]
                    obj = raw["object"]
                    if etype == "ERROR":
                        code = obj.get("code", 0) if isinstance(obj, dict) else 0
                        raise error_from_status(obj if isinstance(obj, dict) else None, code or 0)
                    if kind is not None and "kind" not in obj:
                        obj["kind"] = kind
                        obj["apiVersion"] = api_version
                    self._events += 1
                    yield WatchEvent(etype, obj)
                    if self._closed:
                        return
            if pending.strip() and not self._closed:
                raise ValueError(f"watch stream ended inside an event ({len(pending)} bytes unterminated)")
            clean = not self._closed
        except ApiError:
            raise
        except Exception:
            if self._closed:
                return  # close() broke the read on purpose: not an error
            raise
        finally:
            with self._lock:
                self._reading = False
                self._closed = True
                already = self._released
                self._released = True
            if not already:
                _release(self._response, reusable=clean)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("reading" if self._reading else "open")
        return f"<WatchStream {self._resource or ''} {state} events={self._events}>"


# --------------------------------------------------------------------------- client


class ResourceClient:
    """List, watch, read and write one :class:`Resource` on dicts, through ``api_client``.

    ``request_timeout`` is the per-read timeout (seconds) of non-watch requests;
    a watch reads without one beyond its server timeout (plus slack), because a
    healthy watch can be quiet for minutes.

    Every method raises a typed :class:`~pyinformers.api.errors.ApiError` when
    the server answers with an error; network failures propagate as the
    underlying urllib3/OSError exceptions. Thread-safe, stateless.
    """

    def __init__(self, api_client: Any, resource: Resource, *, request_timeout: Optional[float] = 60.0) -> None:
        if not isinstance(resource, Resource):
            raise TypeError(f"resource must be a Resource, got {type(resource).__name__}")
        self._api_client = api_client
        self._resource = resource
        self._request_timeout = request_timeout

    @property
    def resource(self) -> Resource:
        return self._resource

    @property
    def api_client(self) -> Any:
        return self._api_client

    # -- helpers -----------------------------------------------------------------------
    def _timeout(self, timeout: Optional[float]) -> Any:
        read = timeout if timeout is not None else self._request_timeout
        return (CONNECT_TIMEOUT, read) if read is not None else (CONNECT_TIMEOUT, None)

    def _collection_namespace(self, namespace: Optional[str]) -> Optional[str]:
        if namespace is not None and not self._resource.namespaced:
            raise ValueError(f"{self._resource} is cluster-scoped: no namespace allowed (got {namespace!r})")
        return namespace

    def _object_namespace(self, namespace: Optional[str], obj: Optional[Mapping[str, Any]] = None) -> Optional[str]:
        """The namespace of one object: required for namespaced resources, forbidden otherwise."""
        if namespace is None and obj is not None:
            namespace = (obj.get("metadata") or {}).get("namespace")
        if self._resource.namespaced:
            if not namespace:
                raise ValueError(f"{self._resource} is namespaced: a namespace is required")
            return namespace
        if namespace and obj is None:
            raise ValueError(f"{self._resource} is cluster-scoped: no namespace allowed (got {namespace!r})")
        return None

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

    def _object(self, method: str, path: str, query: Sequence[tuple[str, Any]] = (), **kwargs: Any) -> dict:
        response = _send(self._api_client, method, path, query, timeout=self._timeout(None), **kwargs)
        return _read_json(response)

    # -- reads -------------------------------------------------------------------------
    def list(
        self,
        namespace: Optional[str] = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
        limit: Optional[int] = None,
        continue_: Optional[str] = None,
        resource_version: Optional[str] = None,
        resource_version_match: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> ListPage:
        """One page of the collection (all namespaces when ``namespace`` is None).

        Raises :class:`~pyinformers.api.errors.Gone` when ``continue_`` expired.
        """
        query: list[tuple[str, Any]] = []
        label = _selector(label_selector, "label")
        field = _selector(field_selector, "field")
        if label:
            query.append(("labelSelector", label))
        if field:
            query.append(("fieldSelector", field))
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
        body = _read_json(_send(self._api_client, "GET", path, query, timeout=self._timeout(timeout)))
        if not isinstance(body, dict):
            raise ValueError(f"list {path}: expected a JSON object, got {type(body).__name__}")
        metadata = body.get("metadata") or {}
        items = body.get("items") or []
        return ListPage(
            items=self._fill_type(items),
            resource_version=metadata.get("resourceVersion") or "",
            continue_=metadata.get("continue") or None,
            remaining_item_count=metadata.get("remainingItemCount"),
        )

    def list_all(
        self,
        namespace: Optional[str] = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
        page_size: int = 500,
        timeout: Optional[float] = None,
    ) -> ListPage:
        """Every page of the collection, as one :class:`ListPage` (consistent snapshot).

        The resourceVersion is the first page's (the snapshot all pages come
        from). A continue token that expires mid-way raises Gone: start again.
        """
        items: list = []
        first_rv: Optional[str] = None
        token: Optional[str] = None
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
        namespace: Optional[str] = None,
        *,
        resource_version: Optional[str] = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        allow_bookmarks: bool = True,
        timeout_seconds: Optional[int] = None,
        send_initial_events: bool = False,
        resource_version_match: Optional[str] = None,
    ) -> WatchStream:
        """Open a watch and return its :class:`WatchStream` (the caller closes it).

        An error answer to the request itself (e.g. 410 for a compacted
        ``resource_version``) raises here; one sent inside the stream raises
        from iteration. ``send_initial_events`` asks for a streaming list (the
        server sends the current objects as ADDED, then a BOOKMARK annotated
        ``k8s.io/initial-events-end``); it implies ``resource_version_match=
        "NotOlderThan"`` and bookmarks, as the API requires.
        """
        query: list[tuple[str, Any]] = [("watch", "true")]
        label = _selector(label_selector, "label")
        field = _selector(field_selector, "field")
        if label:
            query.append(("labelSelector", label))
        if field:
            query.append(("fieldSelector", field))
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
        read_timeout: Optional[float] = None
        if timeout_seconds is not None:
            if timeout_seconds <= 0:
                raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds}")
            query.append(("timeoutSeconds", int(timeout_seconds)))
            read_timeout = float(timeout_seconds) + WATCH_READ_SLACK
        path = self._resource.path(self._collection_namespace(namespace))
        response = _send(self._api_client, "GET", path, query, timeout=(CONNECT_TIMEOUT, read_timeout))
        _raise_for_status(response)
        return WatchStream(response, self._resource)

    def get(self, name: str, namespace: Optional[str] = None) -> dict:
        """The object ``name`` (in ``namespace`` for namespaced resources); NotFound if absent."""
        path = self._resource.path(self._object_namespace(namespace), name)
        return self._fill_type([self._object("GET", path)])[0]

    # -- writes ------------------------------------------------------------------------
    def create(self, obj: Mapping[str, Any], namespace: Optional[str] = None) -> dict:
        """Create ``obj`` (namespace from the argument or ``obj.metadata.namespace``); returns the stored object."""
        ns = self._object_namespace(namespace, obj)
        body = dict(obj)
        body.setdefault("apiVersion", self._resource.api_version)
        body.setdefault("kind", self._resource.kind)
        return self._object("POST", self._resource.path(ns), body=body, headers={"Content-Type": "application/json"})

    def replace(self, obj: Mapping[str, Any]) -> dict:
        """PUT ``obj`` over the stored one; Conflict if its resourceVersion is stale."""
        ns = self._object_namespace(None, obj)
        path = self._resource.path(ns, self._name_of(obj))
        return self._object("PUT", path, body=self._with_type(obj), headers={"Content-Type": "application/json"})

    def replace_status(self, obj: Mapping[str, Any]) -> dict:
        """PUT ``obj`` to the ``status`` subresource (only its status is written)."""
        ns = self._object_namespace(None, obj)
        path = self._resource.path(ns, self._name_of(obj), "status")
        return self._object("PUT", path, body=self._with_type(obj), headers={"Content-Type": "application/json"})

    def patch(
        self,
        name: str,
        body: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        namespace: Optional[str] = None,
        *,
        patch_type: str = "merge",
        subresource: Optional[str] = None,
        field_manager: Optional[str] = None,
        force: bool = False,
    ) -> dict:
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
        if patch_type == "apply":
            if not field_manager:
                raise ValueError("server-side apply needs a field_manager")
            if force:
                query.append(("force", "true"))
        path = self._resource.path(self._object_namespace(namespace), name, subresource)
        return self._object("PATCH", path, query, body=body, headers={"Content-Type": content_type})

    def delete(
        self,
        name: str,
        namespace: Optional[str] = None,
        *,
        propagation_policy: Optional[str] = None,
        grace_period_seconds: Optional[int] = None,
        preconditions: Optional[Mapping[str, str]] = None,
    ) -> dict:
        """Delete the object ``name``; returns what the server answered (the object or a Status).

        ``propagation_policy``: ``"Foreground"``, ``"Background"`` or ``"Orphan"``.
        ``preconditions``: ``{"uid": ..., "resourceVersion": ...}`` (Conflict when they fail).
        """
        if propagation_policy is not None and propagation_policy not in ("Foreground", "Background", "Orphan"):
            raise ValueError(f"propagation_policy must be Foreground, Background or Orphan, got {propagation_policy!r}")
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = int(grace_period_seconds)
        if preconditions:
            options["preconditions"] = dict(preconditions)
        path = self._resource.path(self._object_namespace(namespace), name)
        return self._object("DELETE", path, body=options, headers={"Content-Type": "application/json"})

    def _with_type(self, obj: Mapping[str, Any]) -> dict:
        body = dict(obj)
        body.setdefault("apiVersion", self._resource.api_version)
        body.setdefault("kind", self._resource.kind)
        return body

    def __repr__(self) -> str:
        host = getattr(getattr(self._api_client, "configuration", None), "host", "?")
        return f"<ResourceClient {self._resource} at {host}>"


# --------------------------------------------------------------------------- list/watch seam


@runtime_checkable
class ListerWatcher(Protocol):
    """What a Reflector reads from: one collection, listed in pages and watched.

    Implementations: :class:`ListWatch` over HTTP; scripted fakes in tests.
    """

    def list(
        self,
        *,
        limit: Optional[int] = None,
        continue_: Optional[str] = None,
        resource_version: Optional[str] = None,
        resource_version_match: Optional[str] = None,
    ) -> ListPage: ...

    def watch(
        self,
        *,
        resource_version: Optional[str] = None,
        allow_bookmarks: bool = True,
        timeout_seconds: Optional[int] = None,
        send_initial_events: bool = False,
    ) -> WatchStream: ...


class ListWatch:
    """The :class:`ListerWatcher` of one resource (optionally one namespace and selectors) over HTTP."""

    def __init__(
        self,
        client: ResourceClient,
        *,
        namespace: Optional[str] = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.label_selector = _selector(label_selector, "label")
        self.field_selector = _selector(field_selector, "field")

    @property
    def resource(self) -> Resource:
        return self.client.resource

    def list(
        self,
        *,
        limit: Optional[int] = None,
        continue_: Optional[str] = None,
        resource_version: Optional[str] = None,
        resource_version_match: Optional[str] = None,
    ) -> ListPage:
        return self.client.list(
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def watch(
        self,
        *,
        resource_version: Optional[str] = None,
        allow_bookmarks: bool = True,
        timeout_seconds: Optional[int] = None,
        send_initial_events: bool = False,
    ) -> WatchStream:
        return self.client.watch(
            self.namespace,
            resource_version=resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=allow_bookmarks,
            timeout_seconds=timeout_seconds,
            send_initial_events=send_initial_events,
        )

    def __repr__(self) -> str:
        parts = [str(self.client.resource)]
        if self.namespace:
            parts.append(f"namespace={self.namespace}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector!r}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector!r}")
        return f"<ListWatch {' '.join(parts)}>"
