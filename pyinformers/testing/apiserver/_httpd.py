"""HTTP for the in-process API server: routing, responses, chunked watch streams.

:class:`HttpServer` is a ``ThreadingHTTPServer`` speaking HTTP/1.1 with
keep-alive; every connection gets one daemon thread named
``pyinformers-apiserver-conn-<n>``, tracked so that :meth:`HttpServer.close`
can cut open connections (idle keep-alives and watch streams) and join their
threads. :class:`Dispatcher` turns a request into a call on
:class:`~pyinformers.testing.apiserver._rest.RestApi` and the result into a JSON
response; every failure becomes a ``Status`` body, never a traceback or a hung
connection.

Watches are answered with ``Transfer-Encoding: chunked``, one JSON event per
line, several lines per chunk when events arrive faster than they are
written. A watch ends cleanly (final empty chunk) at ``timeoutSeconds`` or when
its watcher is closed for overflow; it is cut abruptly (like a broken
connection) when dropped by a fault or when the server stops.

URL layout (as the real server's)::

    /api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]

Each request is authenticated and authorized (:mod:`.auth`) from its
headers and path before its body is read; bodies are capped at 3 MiB (413),
malformed framing is a 400, and a connection silent for ``idle_timeout`` is
closed. Every 500 is logged with its traceback (logger
``pyinformers.testing.apiserver._httpd``).

Thread-safety: the dispatcher is shared by all connection threads; its
mutable state (request log, counters) sits behind one lock.
"""

from __future__ import annotations

import itertools
import logging
import select
import socket
import ssl
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.testing.apiserver._auth import Authenticator, User
from pyinformers.testing.apiserver._decode import decode_body
from pyinformers.testing.apiserver._faults import Faults
from pyinformers.testing.apiserver._managed import check_field_manager, manager_name
from pyinformers.testing.apiserver._negotiation import (
    FULL,
    TABLE,
    Form,
    NotAcceptable,
    content_type,
    go_type_name,
    negotiate,
    partial_object,
    printer_columns,
    transform_answer,
)
from pyinformers.testing.apiserver._openapi import v2_document, v3_document, v3_index
from pyinformers.testing.apiserver._options import (
    for_one_object,
    go_bool,
    parse_list_options,
    parse_watch_options,
)
from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._rest import CRD_STORAGE_KEY, RestApi
from pyinformers.testing.apiserver._scale import SCALABLE, scale_of
from pyinformers.testing.apiserver._status import (
    StatusError,
    bad_request,
    invalid,
    method_not_allowed,
    not_found,
    status_object,
)
from pyinformers.testing.apiserver._watch import Watcher, WatchHub

__all__ = ["RequestRecord", "Dispatcher", "HttpServer"]

_JSON = "application/json"
APPLY_PATCH = "application/apply-patch+yaml"
_LIVENESS_CHECK = 0.25  # how often an idle watch checks that its client is still there
_CHUNK_LINES = 256  # most event lines per chunk
_BOOKMARK_BEFORE_TIMEOUT = (
    2.0  # the real server's first bookmark comes about 2 s before timeoutSeconds
)
_CLEAN_ENDS = (
    "overflow",
    "restart",
    "removed",
)  # watcher close reasons that end the stream properly
_MAX_TRAILERS = 100
_AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_DISCARD_SLACK = 1024 * 1024  # how far past the body limit a refused body is still read
_DISCARD_PAUSE = 0.2  # ... as long as the client does not pause longer than this
#: the real server's limit on request bodies (3 MiB)
MAX_REQUEST_BODY = 3 * 1024 * 1024
_ACCEPTABLE = frozenset(
    {
        "*/*",
        "application/*",
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    }
)
_log = logging.getLogger("pyinformers.testing.apiserver._httpd")


@dataclass(frozen=True)
class RequestRecord:
    """One request the server answered (watches are logged when their stream starts)."""

    method: str
    path: str
    query: dict
    status: int


@dataclass(frozen=True)
class _Route:
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_prefix: bool = False  # came by the deprecated /watch/ path


@dataclass(frozen=True)
class _Text:
    """A non-resource answer sent as text with its own Content-Type."""

    text: str
    content_type: str


class _PageNotFound(Exception):
    """No API serves the path: the real server's plain-text 404."""


def _too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


@dataclass(frozen=True)
class _PathInfo:
    """What a resource path names, before looking anything up (what RBAC decides on)."""

    group: str
    version: str
    namespace: str | None
    plural: str
    name: str | None
    subresource: str | None
    watch_prefix: bool


def _parse_path(raw_path: str) -> _PathInfo | None:
    """Parse ``/api/v1/...`` and ``/apis/{group}/{version}/...`` resource paths; None for anything else.

    Segments are split before percent-decoding, so an encoded slash stays
    inside its segment (and then names nothing: 404).
    """
    parts = [unquote(p) for p in raw_path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api" and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_prefix = bool(rest) and rest[0] == "watch"  # the deprecated /watch/ prefix
    if watch_prefix:
        rest = rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    elif len(rest) == 2 and rest[0] == "namespaces" and watch_prefix:
        pass
    if not rest or len(rest) > 3:
        return None
    return _PathInfo(
        group,
        version,
        namespace,
        rest[0],
        rest[1] if len(rest) >= 2 else None,
        rest[2] if len(rest) == 3 else None,
        watch_prefix,
    )


class _Cut(Exception):
    """The connection must be cut without a proper end (fault, stop, or the client went away)."""


class Dispatcher:
    """Routes requests to the REST layer; records a log and counters. Thread-safe."""

    def __init__(
        self,
        rest: RestApi,
        registry: Registry,
        hub: WatchHub,
        faults: Faults,
        *,
        token: str | None,
        bookmark_interval: float,
        max_watch_queue: int,
        stopping: threading.Event,
        request_log_size: int = 100_000,
        version_info: dict | None = None,
        clock: Clock = REAL_CLOCK,
        max_body: int = MAX_REQUEST_BODY,
    ) -> None:
        self.rest = rest
        self.registry = registry
        self.hub = hub
        self.faults = faults
        self.token = token
        self.auth = Authenticator(token)
        self.max_body = max_body
        self.bookmark_interval = bookmark_interval
        self.max_watch_queue = max_watch_queue
        self.stopping = stopping
        self.clock = clock
        self.version_info = version_info or {
            "major": "1",
            "minor": "31",
            "gitVersion": "v1.31.0-pyinformers",
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "python",
            "compiler": "cpython",
            "platform": "python/any",
        }
        self._lock = threading.Lock()
        self._log: deque[RequestRecord] = deque(maxlen=request_log_size)
        self._counters: Counter[str] = Counter()

    def __repr__(self) -> str:
        with self._lock:
            return f"<Dispatcher requests={self._counters['requests']} watches_open={self.hub.count()}>"

    # -- observability -----------------------------------------------------------------

    def requests(self) -> list[RequestRecord]:
        """The logged requests, oldest first. A request is logged before its answer is sent, so a
        client that has its answer finds the request here."""
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def counters(self) -> dict[str, int]:
        with self._lock:
            counters = dict(self._counters)
        counters["watches_open"] = self.hub.count()
        return counters

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counters[name] += n

    def _record(self, method: str, path: str, query: dict, status: int, verb: str) -> None:
        with self._lock:
            self._log.append(RequestRecord(method, path, query, status))
            self._counters["requests"] += 1
            self._counters[f"verb:{verb}"] += 1
            self._counters[f"status:{status}"] += 1

    # -- entry point ---------------------------------------------------------------------

    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        """Answer one request: authenticate, route, authorize, then (only then) read the body."""
        split = urlsplit(h.path)
        path = unquote(split.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        verb = method.lower()
        body_pending = self._announces_body(h)
        try:
            user = self.auth.authenticate(h.headers.get("Authorization"))
            info = _parse_path(split.path)
            if info is None:
                self.auth.authorize_path(user, method, path)
                document = self._aggregated(
                    path, method, h.headers.get("Accept", "")
                ) or self._non_resource(path, method)
                if document is not None:
                    self._record(method, path, query, 200, "discovery")
                    self._send_document(h, document)
                    return
                raise _PageNotFound()
            verb = self._verb(method, info, query)
            self.auth.authorize_resource(
                user, verb, info.plural, info.group, info.namespace, info.name, info.subresource
            )
            route = self._route(info, path)
            form = self._check_accept(h)
            if query.get("dryRun") not in (None, "All"):
                raise bad_request(
                    f'unsupported dry run value {query["dryRun"]!r}: only "All" is supported'
                )
            self._inject_faults()
            if verb == "watch":
                self._watch(h, route, query, method, path, form)
                return
            body = self._read_body(h)
            body_pending = False
            warnings: list[str] = []
            code, result = self._call(
                verb,
                route,
                query,
                body,
                h.headers.get("Content-Type", ""),
                user,
                warnings,
                h.headers.get("User-Agent", ""),
            )
            answer_type = _JSON
            if form.transformed and verb in ("get", "list") and route.subresource is None:
                result = self._transform(result, form, route.resource, query)
                answer_type = content_type(form)
            self._record(
                method, path, query, code, verb
            )  # before the answer: a client that got it finds it logged
            self._send_json(h, code, result, warnings=warnings, content_type=answer_type)
        except StatusError as exc:
            if body_pending:
                h.close_connection = True  # the unread body would be taken for the next request
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
            if exc.code >= 500 and exc.reason == "InternalError":
                _log.error(
                    "pyinformers.testing: %s %s answered %d: %s",
                    method,
                    path,
                    exc.code,
                    exc.message,
                )
            self._record(method, path, query, exc.code, verb)
            self._send_json(h, exc.code, exc.status, headers=headers)
        except _PageNotFound:
            if body_pending:
                h.close_connection = True
            self._record(method, path, query, 404, verb)
            self._send_text(h, 404, "404 page not found\n")
        except _Cut:
            h.close_connection = True
        except (TimeoutError, BrokenPipeError, ConnectionError):
            h.close_connection = True
        except (
            Exception
        ) as exc:  # a bug in the server must still produce an answer, and a traceback in the log
            _log.exception("pyinformers.testing: internal error answering %s %s", method, path)
            h.close_connection = True
            self._record(method, path, query, 500, verb)
            self._send_json(
                h,
                500,
                status_object(
                    500, "InternalError", f"pyinformers.testing: internal error: {exc!r}"
                ),
            )

    @staticmethod
    def _announces_body(h: BaseHTTPRequestHandler) -> bool:
        length = h.headers.get("Content-Length")
        return h.headers.get("Transfer-Encoding", "").lower() == "chunked" or (
            length is not None and length.strip() not in ("", "0")
        )

    def _read_body(self, h: BaseHTTPRequestHandler) -> bytes:
        """The request body, at most :attr:`max_body` bytes (413 beyond, 400 when malformed).

        A request whose body is refused leaves its connection to be closed:
        the rest of the body is never read.
        """
        limit = self.max_body
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            total = 0
            while True:
                size_line = h.rfile.readline(1025)
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                    if size < 0:
                        raise ValueError(size)
                except ValueError:
                    h.close_connection = True
                    raise bad_request("malformed chunked request body: bad chunk size") from None
                if size == 0:
                    for _ in range(_MAX_TRAILERS):
                        if h.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                            break
                    return b"".join(parts)
                total += size
                if total > limit:
                    h.close_connection = True
                    raise _too_large(limit)
                chunk = h.rfile.read(size)
                if len(chunk) < size:
                    h.close_connection = True
                    raise bad_request("malformed chunked request body: truncated chunk")
                parts.append(chunk)
                h.rfile.readline(65537)
        length = h.headers.get("Content-Length")
        if length is None or not length.strip():
            return b""
        try:
            n = int(length.strip())
            if n < 0 or not length.strip().isdigit():
                raise ValueError(n)
        except ValueError:
            h.close_connection = True
            raise bad_request(f"invalid Content-Length {length[:40]!r}") from None
        if n > limit:
            # Read (and drop) a little past the limit so that a client that sends its whole
            # body before reading gets the 413 rather than a broken pipe; then close.
            h.close_connection = True
            self._discard(h, min(n, limit + _DISCARD_SLACK))
            raise _too_large(limit)
        body = h.rfile.read(n)
        if len(body) < n:
            h.close_connection = True
            raise bad_request("the request body ended before its Content-Length")
        return body

    @staticmethod
    def _discard(h: BaseHTTPRequestHandler, amount: int) -> None:
        """Read and drop up to ``amount`` bytes of a refused body, while the client keeps sending."""
        sock = h.connection
        previous = sock.gettimeout()
        sock.settimeout(_DISCARD_PAUSE)
        try:
            while amount > 0:
                chunk = h.rfile.read1(min(amount, 65536))
                if not chunk:
                    return
                amount -= len(chunk)
        except OSError:
            return  # the client paused or went away: answer now
        finally:
            try:
                sock.settimeout(previous)
            except OSError:
                pass

    def _check_accept(self, h: BaseHTTPRequestHandler) -> Form:
        """The answer's form (:mod:`._negotiation`): the first entry of ``Accept`` this server can produce.

        Protobuf is taken for JSON (the answers of this server are JSON whatever is asked).
        """
        accept = h.headers.get("Accept")
        if not accept:
            return FULL
        try:
            return negotiate(accept)
        except NotAcceptable:
            pass
        for item in accept.split(","):
            media = item.split(";")[0].strip().lower()
            if media in _ACCEPTABLE:
                return FULL
        raise StatusError(
            406,
            "NotAcceptable",
            "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, "
            "application/vnd.kubernetes.protobuf, application/json;stream=watch, "
            "application/vnd.kubernetes.protobuf;stream=watch",
            details={},
        )

    def _transform(self, answer: Any, form: Form, rt: ResourceType, query: dict) -> Any:
        """A get or list answer in ``form`` (406 when the form does not fit the answer, as the real server says)."""
        columns = None
        if form.kind == TABLE.kind:
            crd = (
                self.rest.store.get(CRD_STORAGE_KEY, "", rt.crd_name)
                if rt.is_custom and rt.crd_name
                else None
            )
            columns = (
                printer_columns(crd, rt.version) if crd is not None else printer_columns(None, "")
            )
        try:
            return transform_answer(
                answer,
                form,
                columns=columns,
                include_object=query.get("includeObject") or "Metadata",
                go_type=go_type_name(
                    rt.group,
                    rt.kind,
                    custom=rt.is_custom,
                    is_list=isinstance(answer.get("items"), list),
                ),
            )
        except NotAcceptable as error:
            raise StatusError(406, "NotAcceptable", str(error)) from None
        except ValueError as error:
            raise bad_request(str(error)) from None

    def _inject_faults(self) -> None:
        faults = self.faults
        if faults.latency > 0:
            self.stopping.wait(faults.latency)
        if faults.roll(faults.throttle_rate):
            self.count("faults:throttled")
            retry = int(faults.retry_after)
            raise StatusError(
                429,
                "TooManyRequests",
                "pyinformers.testing: too many requests (injected fault), please try again later",
                details={"retryAfterSeconds": retry},
                retry_after=retry,
            )
        if faults.roll(faults.error_rate):
            self.count("faults:errors")
            raise StatusError(
                500, "InternalError", "pyinformers.testing: internal error (injected fault)"
            )

    # -- routing -----------------------------------------------------------------------------

    def _aggregated(self, path: str, method: str, accept: str) -> Any | None:
        """``/api`` and ``/apis`` as aggregated discovery when the client asks for it (as kubectl does first)."""
        path = path.rstrip("/") or "/"
        if (
            method != "GET"
            or path not in ("/api", "/apis")
            or "as=APIGroupDiscoveryList" not in accept
        ):
            return None
        for item in accept.split(","):
            params = {
                k.strip(): v.strip() for k, _, v in (p.partition("=") for p in item.split(";")[1:])
            }
            if (
                params.get("as") == "APIGroupDiscoveryList"
                and params.get("g") == "apidiscovery.k8s.io"
                and params.get("v") == "v2"
            ):
                document = self.registry.aggregated_discovery(core=path == "/api")
                return _Text(orjson.dumps(document).decode(), _AGGREGATED_DISCOVERY)
        return None

    def _non_resource(self, path: str, method: str) -> Any | None:
        path = path.rstrip("/") or "/"
        if method != "GET":
            return None
        if path == "/version":
            return self.version_info
        if path in ("/healthz", "/readyz", "/livez"):
            return "ok"
        if path == "/api":
            return self.registry.core_versions()
        if path == "/apis":
            return self.registry.api_group_list()
        if path == "/openapi/v2":
            return v2_document(self.registry)
        if path == "/openapi/v3":
            # The real server sends this JSON index as text/plain.
            return _Text(
                orjson.dumps(v3_index(self.registry)).decode(), "text/plain; charset=utf-8"
            )
        if path.startswith("/openapi/v3/"):
            gv = path[len("/openapi/v3/") :].split("/")
            if len(gv) == 2 and gv[0] == "api":
                document = v3_document(self.registry, "", gv[1])
            elif len(gv) == 3 and gv[0] == "apis":
                document = v3_document(self.registry, gv[1], gv[2])
            else:
                document = None
            if document is None:
                raise _PageNotFound()
            return document
        parts = path.strip("/").split("/")
        if parts == ["api", "v1"]:
            return self.registry.resource_list("", "v1")
        if len(parts) == 2 and parts[0] == "apis":
            group = self.registry.api_group(parts[1])
            if group is None:
                raise _PageNotFound()  # no API group of that name: the plain-text 404
            return group
        if len(parts) == 3 and parts[0] == "apis":
            resources = self.registry.resource_list(parts[1], parts[2])
            if resources is None:
                if not self.registry.group_versions(parts[1]):
                    raise _PageNotFound()
                raise not_found("", "", None)
            return resources
        if parts and parts[0] == "api" and len(parts) > 1:
            raise not_found("", "", None)  # the core API group exists: a JSON 404
        return None

    def _route(self, info: _PathInfo, path: str) -> _Route:
        """The served resource a parsed path names (404 when none)."""
        rt = self.registry.lookup(info.group, info.version, info.plural)
        if rt is None:
            if info.group and not self.registry.is_builtin_group(info.group):
                raise _PageNotFound()  # custom resources' groups answer unknown paths in plain text
            raise not_found("", "", None)
        if info.namespace is not None and not rt.namespaced:
            raise not_found("", "", None)
        if any(value is not None and "/" in value for value in (info.name, info.namespace)):
            raise not_found("", "", None)  # an encoded slash: no such path (not "object not found")
        for what, value in (("Name", info.name), ("Namespace", info.namespace)):
            if value in (".", ".."):
                raise bad_request(f"{what} parameter invalid: \"{value}\": may not be '{value}'")
        sub = info.subresource
        if sub == "status" and not rt.has_status and info.name:
            raise not_found(rt.plural, rt.group, info.name)  # the real server names the object
        if sub is not None and sub not in self._subresources(rt):
            raise not_found("", "", None)
        return _Route(rt, info.namespace, info.name, sub, info.watch_prefix)

    @staticmethod
    def _subresources(rt: ResourceType) -> tuple[str, ...]:
        subs: tuple[str, ...] = ()
        if rt.has_status:
            subs += ("status",)
        if rt.storage_key == "/namespaces":
            subs += ("finalize",)
        if rt.storage_key in SCALABLE:
            subs += ("scale",)
        if rt.storage_key == "/serviceaccounts":
            subs += ("token",)
        return subs

    @staticmethod
    def _verb(method: str, info: _PathInfo, query: dict) -> str:
        watching = info.watch_prefix or bool(go_bool(query.get("watch")))
        if info.name is None:
            verbs = {
                "GET": "watch" if watching else "list",
                "POST": "create",
                "DELETE": "deletecollection",
            }
        else:
            verbs = {
                "GET": "watch" if info.watch_prefix else "get",
                "PUT": "update",
                "PATCH": "patch",
                "DELETE": "delete",
            }
            if info.subresource:
                verbs = {"GET": "get", "PUT": "update", "PATCH": "patch"}
                if info.subresource == "token":
                    verbs = {"POST": "create"}
        verb = verbs.get(method)
        if verb is None:
            raise method_not_allowed()
        return verb

    def _decode(self, body: bytes) -> Any:
        """DeleteOptions and other small JSON bodies."""
        if not body:
            raise bad_request("the request has no body")
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"the request body is not valid JSON: {exc}") from None

    def _call(
        self,
        verb: str,
        route: _Route,
        query: dict,
        body: bytes,
        content_type: str,
        user: User,
        warnings: list,
        user_agent: str = "",
    ) -> tuple[int, Any]:
        rest, rt, ns, sub = self.rest, route.resource, route.namespace, route.subresource
        name = route.name or ""  # the verbs on one object were routed with a name
        dry_run = query.get("dryRun") == "All"
        validation = query.get("fieldValidation") or "Warn"
        if verb == "list":
            return 200, rest.list(rt, ns, parse_list_options(query))
        manager = None
        if verb in ("create", "update", "patch") and sub != "token":
            applying = verb == "patch" and content_type.split(";")[0].strip().lower() == APPLY_PATCH
            manager = self._field_manager(verb, query, user_agent, applying=applying)
            if applying:
                force = bool(go_bool(query.get("force")))
                code, applied = rest.apply(
                    rt,
                    ns,
                    name,
                    body,
                    manager=manager,
                    force=force,
                    subresource=sub,
                    dry_run=dry_run,
                    field_validation=validation,
                    warnings=warnings,
                )
                return code, scale_of(applied) if sub == "scale" else applied
        if sub == "scale":
            return 200, self._scale(verb, route, body, content_type, dry_run, manager)
        if sub == "token":
            return 201, rest.token_request(
                rt, ns, name, decode_body(body, content_type, "TokenRequest"), self.auth
            )
        if verb == "get":
            return 200, rest.get(rt, ns, name)
        if verb == "create":
            document = decode_body(body, content_type, rt.kind)
            return 201, rest.create(
                rt,
                ns,
                document,
                dry_run=dry_run,
                field_validation=validation,
                warnings=warnings,
                user=user.name,
                field_manager=manager,
            )
        if verb == "update":
            document = decode_body(body, content_type, rt.kind)
            return 200, rest.update(
                rt,
                ns,
                name,
                document,
                subresource=sub,
                dry_run=dry_run,
                field_validation=validation,
                warnings=warnings,
                user=user.name,
                field_manager=manager,
            )
        if verb == "patch":
            return 200, rest.patch(
                rt,
                ns,
                name,
                body,
                content_type,
                subresource=sub,
                dry_run=dry_run,
                field_validation=validation,
                warnings=warnings,
                user=user.name,
                field_manager=manager,
            )
        if verb in ("delete", "deletecollection"):
            options = self._delete_options(body, query)
            if verb == "delete":
                return rest.delete(
                    rt, ns, name, options, dry_run=dry_run, user=user.name, warnings=warnings
                )
            selectors = {k: v for k, v in query.items() if k in ("labelSelector", "fieldSelector")}
            return 200, rest.delete_collection(rt, ns, parse_list_options(selectors), options)
        raise method_not_allowed()

    def _scale(
        self,
        verb: str,
        route: _Route,
        body: bytes,
        content_type: str,
        dry_run: bool,
        manager: str | None,
    ) -> dict:
        rest, rt, ns, name = self.rest, route.resource, route.namespace, route.name or ""
        if verb == "get":
            return scale_of(rest.get(rt, ns, name))
        if verb == "update":
            scale = decode_body(body, content_type, "Scale")
            return scale_of(
                rest.set_replicas(rt, ns, name, scale, dry_run=dry_run, field_manager=manager)
            )
        return scale_of(
            rest.patch_scale(
                rt, ns, name, body, content_type, dry_run=dry_run, field_manager=manager
            )
        )

    @staticmethod
    def _field_manager(verb: str, query: dict, user_agent: str, *, applying: bool) -> str:
        """The manager a write is recorded under, after the real server's checks of the options (422)."""
        options = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}[
            verb
        ]
        requested = query.get("fieldManager")
        cause = check_field_manager(requested, options, apply_patch=applying)
        if cause is None and "force" in query and not applying:
            cause = ("FieldValueForbidden", "force", "may not be specified for non-apply patch")
        if cause is not None:
            raise invalid(options, "meta.k8s.io", "", [cause])
        return manager_name(requested, user_agent)

    def _delete_options(self, body: bytes, query: dict) -> dict:
        options: dict = {}
        if body.strip():
            options = self._decode(body)
            if not isinstance(options, dict):
                raise bad_request("DeleteOptions must be a JSON object")
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = query["orphanDependents"].lower() == "true"
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = query["gracePeriodSeconds"]
        return options

    # -- watch ---------------------------------------------------------------------------------

    def _watch(
        self,
        h: BaseHTTPRequestHandler,
        route: _Route,
        query: dict,
        method: str,
        path: str,
        form: Form = FULL,
    ) -> None:
        options = parse_watch_options(query, legacy_path=route.watch_prefix)
        if route.name is not None:  # /watch/.../{name}: that one object
            options = for_one_object(options, route.name)
        rt = route.resource
        try:
            watcher, initial, start_rv, initial_end = self.rest.open_watch(
                rt, route.namespace, options, max_queue=self.max_watch_queue
            )
        except StatusError as exc:
            if exc.code not in (410, 504):
                raise
            # The real server answers an expired resourceVersion, and a streaming list from one it
            # has not reached (after waiting about 3 s for it; here at once), with 200 and an ERROR event.
            self._record(method, path, query, 200, "watch")  # before the client can have the answer
            self._start_stream(h)
            self._chunk(h, b'{"type":"ERROR","object":' + orjson.dumps(exc.status) + b"}\n")
            self._end_stream(h)
            return
        if form.kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            # Each event's object as PartialObjectMetadata (bookmarks too), as the real server sends them.
            item_form = Form("PartialObjectMetadata", form.version)
            watcher.transform = lambda obj: partial_object(obj, item_form)
        self.count("watches")
        try:
            self._record(method, path, query, 200, "watch")  # before the client can have the answer
            self._start_stream(h)
            self._serve_watch(h, watcher, options, initial, start_rv, initial_end)
        except (_Cut, OSError):
            raise _Cut() from None
        except Exception:  # the stream has started: no error response can follow, only a cut
            self.count("watches:failed")
            raise _Cut() from None
        finally:
            self.hub.close(watcher)

    def _start_stream(self, h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", _JSON)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache, private")
        h.end_headers()

    @staticmethod
    def _chunk(h: BaseHTTPRequestHandler, data: bytes) -> None:
        if data:
            h.wfile.write(b"%x\r\n%b\r\n" % (len(data), data))

    @staticmethod
    def _chunks(h: BaseHTTPRequestHandler, lines: list[bytes]) -> None:
        """Write lines as chunks of at most ``_CHUNK_LINES`` lines, each built with one copy."""
        for i in range(0, len(lines), _CHUNK_LINES):
            part = lines[i : i + _CHUNK_LINES]
            size = sum(map(len, part))
            h.wfile.write(b"".join([b"%x\r\n" % size, *part, b"\r\n"]))

    @staticmethod
    def _end_stream(h: BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"0\r\n\r\n")

    @staticmethod
    def _client_gone(h: BaseHTTPRequestHandler) -> bool:
        sock = h.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            if isinstance(sock, ssl.SSLSocket):
                return False  # no peeking through TLS: a gone client shows when a write fails
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _serve_watch(
        self,
        h: BaseHTTPRequestHandler,
        watcher: Watcher,
        options: Any,
        initial: list[dict],
        start_rv: int,
        initial_end: bool,
    ) -> None:
        faults, clock = self.faults, self.clock
        now = clock.now()
        deadline = now + options.timeout_seconds if options.timeout_seconds else None
        next_bookmark = now + self.bookmark_interval if options.allow_bookmarks else None
        if next_bookmark is not None and deadline is not None:
            next_bookmark = min(next_bookmark, deadline - _BOOKMARK_BEFORE_TIMEOUT)
        next_liveness = now + _LIVENESS_CHECK
        sent = 0
        # Stalled before the first byte: keep the connection open, send nothing.
        self._stall(h, watcher)
        for i in range(0, len(initial), _CHUNK_LINES):
            lines = watcher.encode_objects(initial[i : i + _CHUNK_LINES])
            sent += len(lines)
            self._chunks(h, lines)
        if initial_end:
            self._chunk(h, watcher.bookmark_line(start_rv, initial_events_end=True))
        while True:
            if faults.stall_watches:
                self._stall(h, watcher)
                continue
            now = clock.now()
            wait = next_liveness - now
            if deadline is not None:
                wait = min(wait, deadline - now)
            if next_bookmark is not None:
                wait = min(wait, next_bookmark - now)
            batch = watcher.next_batch(max(wait, 0.0), clock)
            if batch is None:
                reason = watcher.close_reason
                if reason in _CLEAN_ENDS:
                    self.count(
                        "watches:overflowed" if reason == "overflow" else f"watches:{reason}"
                    )
                    break
                self.count(f"watches:{reason}")
                raise _Cut()
            if batch:
                lines = watcher.encode(batch)
                if lines:
                    self._chunks(h, lines)
                    sent += len(lines)
                    if faults.roll(faults.drop_watch_probability):
                        self.count("watches:dropped")
                        raise _Cut()
            now = clock.now()
            if next_bookmark is not None and now >= next_bookmark:
                rv = self.hub.bookmark_rv(watcher)
                if rv is not None:
                    self._chunk(h, watcher.bookmark_line(rv))
                next_bookmark = now + self.bookmark_interval
            if deadline is not None and now >= deadline:
                break
            if now >= next_liveness:
                if self._client_gone(h):
                    raise _Cut()
                next_liveness = now + _LIVENESS_CHECK
        self.count("watch_events_sent", sent)
        self._end_stream(h)

    def _stall(self, h: BaseHTTPRequestHandler, watcher: Watcher) -> None:
        """While watches are stalled: send nothing, but notice stop, drops and a vanished client.

        The ``watches_stalled`` counter holds how many watches are parked here right now, so a
        test can wait until a stall has taken hold instead of guessing (an idle watch notices
        the fault at its next wake-up, up to ``_LIVENESS_CHECK`` later).
        """
        if not self.faults.stall_watches:
            return
        self.count("watches_stalled")
        try:
            while self.faults.stall_watches:
                if watcher.closed and watcher.close_reason != "overflow":
                    raise _Cut()
                if self.stopping.wait(_LIVENESS_CHECK) or self._client_gone(h):
                    raise _Cut()
        finally:
            self.count("watches_stalled", -1)

    # -- responses -----------------------------------------------------------------------------

    def _send_document(self, h: BaseHTTPRequestHandler, document: Any) -> None:
        """A non-resource answer: plain text for the health endpoints, JSON otherwise."""
        if isinstance(document, _Text):
            self._send_text(h, 200, document.text, document.content_type)
        elif isinstance(document, str):
            self._send_text(h, 200, document)
        else:
            self._send_json(h, 200, document)

    @staticmethod
    def _send_text(
        h: BaseHTTPRequestHandler,
        code: int,
        text: str,
        content_type: str = "text/plain; charset=utf-8",
    ) -> None:
        body = text.encode()
        h.send_response(code)
        h.send_header("Content-Type", content_type)
        h.send_header("X-Content-Type-Options", "nosniff")
        h.send_header("Content-Length", str(len(body)))
        if h.close_connection:
            h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)

    @staticmethod
    def _send_json(
        h: BaseHTTPRequestHandler,
        code: int,
        document: Any,
        *,
        headers: dict | None = None,
        warnings: list | None = None,
        content_type: str = _JSON,
    ) -> None:
        body = orjson.dumps(document)
        h.send_response(code)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        if h.close_connection:
            h.send_header("Connection", "close")
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        for warning in warnings or ():
            h.send_header(
                "Warning", '299 - "' + warning.replace("\\", "\\\\").replace('"', '\\"') + '"'
            )
        h.end_headers()
        h.wfile.write(body)


class _Headers(dict):
    """Request headers with case-insensitive ``get`` (keys are stored lower-cased)."""

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> Any:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


_MAX_HEADER_LINE = 65536
_MAX_HEADERS = 100


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pyinformers-apiserver"
    sys_version = ""
    server: HttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def setup(self) -> None:
        # A new connection has the header timeout to send its first request's line and
        # headers (a half-open connection that sends nothing is closed then, as the
        # Manager's servers do); after a response, an idle keep-alive may wait for the
        # next request up to the idle timeout (see parse_request and _dispatch).
        self.request.settimeout(self.server.header_timeout)
        super().setup()

    def _dispatch(self, method: str) -> None:
        # Headers are in: the body, the work and the response get the idle timeout,
        # which is also how long this connection may then wait for its next request.
        self.request.settimeout(self.server.idle_timeout)
        self.server.dispatcher.handle(self, method)

    def parse_request(self) -> bool:
        """Parse the request line and headers (HTTP/1.x only) without the email parser.

        The standard library's header parsing costs more than serving most
        requests; clients of this server send plain HTTP/1.1 headers.
        """
        # The request line arrived: the rest of the headers within the header timeout.
        self.request.settimeout(self.server.header_timeout)
        self.command = None  # type: ignore[assignment]  # the base class's own "not parsed yet"
        self.request_version = "HTTP/1.0"
        self.close_connection = True
        line = str(getattr(self, "raw_requestline", b""), "iso-8859-1").rstrip("\r\n")
        self.requestline = line
        words = line.split()
        if not words:
            return False
        if len(words) != 3 or words[2] not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(
                400, f"Bad request line ({line[:100]!r}): only HTTP/1.0 and HTTP/1.1 are served"
            )
            return False
        self.command, self.path, self.request_version = words
        self.close_connection = self.request_version == "HTTP/1.0"
        headers = _Headers()
        for _ in range(_MAX_HEADERS + 1):
            raw_line = self.rfile.readline(_MAX_HEADER_LINE + 1)
            if len(raw_line) > _MAX_HEADER_LINE:
                self.send_error(431, "Header line too long")
                return False
            if raw_line in (b"\r\n", b"\n", b""):
                break
            name, colon, value = str(raw_line, "iso-8859-1").partition(":")
            if not colon or not name.strip():
                self.send_error(400, f"Malformed header line ({raw_line[:100]!r})")
                return False
            headers[name.strip().lower()] = value.strip()
        else:
            self.send_error(431, "Too many headers")
            return False
        self.headers = headers  # type: ignore[assignment]
        connection = headers.get("connection", "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        if (
            headers.get("expect", "").lower() == "100-continue"
            and self.request_version == "HTTP/1.1"
        ):
            return self.handle_expect_100()
        return True

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")


class HttpServer(ThreadingHTTPServer):
    """HTTP/1.1 server with one named daemon thread per connection, all of them stoppable."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        dispatcher: Dispatcher,
        *,
        idle_timeout: float | None = 60.0,
        header_timeout: float | None = 10.0,
        tls: tuple[str, str] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.idle_timeout = idle_timeout
        # Never longer than the idle timeout: a shorter idle bound also bounds the headers.
        self.header_timeout = (
            idle_timeout
            if header_timeout is None
            or (idle_timeout is not None and idle_timeout < header_timeout)
            else header_timeout
        )
        self._ssl: ssl.SSLContext | None = None
        if tls is not None:
            self._ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._ssl.load_cert_chain(*tls)
        self._conn_lock = threading.Lock()
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._ids = itertools.count(1)
        super().__init__(address, _Handler)

    def __repr__(self) -> str:
        host, port = self.server_address[:2]
        return f"<HttpServer {host!s}:{port} connections={self.connection_count()}>"

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"pyinformers-apiserver-conn-{next(self._ids)}",
            daemon=True,
        )
        with self._conn_lock:
            self._connections[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                # The handshake happens here, on the connection's thread, within the header timeout.
                request.settimeout(self.header_timeout)
                request = self._ssl.wrap_socket(request, server_side=True)
                with self._conn_lock:
                    self._connections[threading.current_thread()] = request
            self.finish_request(request, client_address)
        except OSError:
            pass  # a broken or timed-out connection: nothing to answer
        except Exception:  # noqa: BLE001 - a bug must not take the server down, but must be seen
            _log.exception("pyinformers.testing: connection from %s failed", client_address)
        finally:
            self.shutdown_request(request)
            with self._conn_lock:
                self._connections.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    def connection_count(self) -> int:
        with self._conn_lock:
            return len(self._connections)

    def close_connections(self, timeout: float) -> bool:
        """Cut every open connection and join the threads serving them; True if all ended in time."""
        with self._conn_lock:
            connections = list(self._connections.items())
        for _thread, sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for thread, _sock in connections:
            thread.join(max(0.0, deadline - time.monotonic()))
        return all(not t.is_alive() for t, _ in connections)
