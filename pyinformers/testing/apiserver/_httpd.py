"""The embedded API server's HTTP dispatcher: one request in, one answer out.

:class:`Dispatcher` answers each request its connection hands it
(:mod:`._http_connections`): it authenticates and authorizes it (:mod:`._auth`)
from its headers and path before its body is read, routes it
(:mod:`._http_routing`), negotiates the answer's form, injects faults, and
then answers a non-resource path (:mod:`._http_discovery`), streams a watch
(:mod:`._http_watch`) or calls the REST layer (:mod:`._http_calls`, over
:class:`~pyinformers.testing.apiserver._rest.RestApi`); bodies and responses
are framed by :mod:`._http_messages` (bodies capped at 3 MiB: 413; malformed
framing: 400).

Invariants: every failure becomes a ``Status`` body (or the real server's
plain-text 404), never a traceback or a hung connection; a request is
logged before its answer is sent; a connection whose request body was left
unread is closed after the answer. Every 500 is logged with its traceback
(logger ``pyinformers.testing.apiserver._httpd``, the logger of the whole
HTTP layer).

Thread-safety: the dispatcher is shared by all connection threads; its
mutable state (request log, counters) sits behind one lock.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.testing.apiserver._auth import Authenticator
from pyinformers.testing.apiserver._faults import Faults
from pyinformers.testing.apiserver._http_calls import call
from pyinformers.testing.apiserver._http_discovery import aggregated, non_resource
from pyinformers.testing.apiserver._http_messages import (
    JSON,
    MAX_REQUEST_BODY,
    announces_body,
    read_body,
    send_document,
    send_json,
    send_text,
)
from pyinformers.testing.apiserver._http_routing import (
    PageNotFound,
    parse_path,
    request_verb,
    resolve,
)
from pyinformers.testing.apiserver._http_watch import Cut, serve_watch
from pyinformers.testing.apiserver._negotiation import (
    FULL,
    TABLE,
    Form,
    NotAcceptable,
    content_type,
    go_type_name,
    negotiate,
    printer_columns,
    transform_answer,
)
from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._rest import RestApi
from pyinformers.testing.apiserver._rest_core import CRD_STORAGE_KEY
from pyinformers.testing.apiserver._status import StatusError, bad_request, status_object
from pyinformers.testing.apiserver._watch import WatchHub

__all__ = ["RequestRecord", "Dispatcher"]

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

    def record(self, method: str, path: str, query: dict, status: int, verb: str) -> None:
        """Log an answered request and count it (before its answer is sent)."""
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
        body_pending = announces_body(h)
        try:
            user = self.auth.authenticate(h.headers.get("Authorization"))
            info = parse_path(split.path)
            if info is None:
                self.auth.authorize_path(user, method, path)
                document = aggregated(
                    self.registry, path, method, h.headers.get("Accept", "")
                ) or non_resource(self.registry, self.version_info, path, method)
                if document is not None:
                    self.record(method, path, query, 200, "discovery")
                    send_document(h, document)
                    return
                raise PageNotFound()
            verb = request_verb(method, info, query)
            self.auth.authorize_resource(
                user, verb, info.plural, info.group, info.namespace, info.name, info.subresource
            )
            route = resolve(self.registry, info)
            form = self._check_accept(h)
            if query.get("dryRun") not in (None, "All"):
                raise bad_request(
                    f'unsupported dry run value {query["dryRun"]!r}: only "All" is supported'
                )
            self._inject_faults()
            if verb == "watch":
                serve_watch(self, h, route, query, method, path, form)
                return
            body = read_body(h, self.max_body)
            body_pending = False
            warnings: list[str] = []
            code, result = call(
                self.rest,
                self.auth,
                verb,
                route,
                query,
                body,
                h.headers.get("Content-Type", ""),
                user,
                warnings,
                h.headers.get("User-Agent", ""),
            )
            answer_type = JSON
            if form.transformed and verb in ("get", "list") and route.subresource is None:
                result = self._transform(result, form, route.resource, query)
                answer_type = content_type(form)
            self.record(
                method, path, query, code, verb
            )  # before the answer: a client that got it finds it logged
            send_json(h, code, result, warnings=warnings, content_type=answer_type)
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
            self.record(method, path, query, exc.code, verb)
            send_json(h, exc.code, exc.status, headers=headers)
        except PageNotFound:
            if body_pending:
                h.close_connection = True
            self.record(method, path, query, 404, verb)
            send_text(h, 404, "404 page not found\n")
        except Cut:
            h.close_connection = True
        except (TimeoutError, BrokenPipeError, ConnectionError):
            h.close_connection = True
        except (
            Exception
        ) as exc:  # a bug in the server must still produce an answer, and a traceback in the log
            _log.exception("pyinformers.testing: internal error answering %s %s", method, path)
            h.close_connection = True
            self.record(method, path, query, 500, verb)
            send_json(
                h,
                500,
                status_object(
                    500, "InternalError", f"pyinformers.testing: internal error: {exc!r}"
                ),
            )

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
