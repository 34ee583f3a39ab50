"""The HTTP transport under :class:`~pyinformers.api._client.ResourceClient`: one request through the official ``ApiClient``.

:func:`send` is the only place in pyinformers that depends on the generated
client's request API. It uses the public request path of the 37 line
(``param_serialize`` then ``call_api``), and falls back to the older single
``call_api(...)`` signature (the 36 line and before) when ``param_serialize``
is missing. A write (any method but GET) on the 37 line goes instead through
:mod:`pyinformers.api._http`, the lean path on the same pooled connections,
wherever that behaves exactly alike. Everything after it is plain ``urllib3``: reading a JSON body
(:func:`read_json`), turning an error answer into a typed
:class:`~pyinformers.api._errors.ApiError` (:func:`raise_for_status`), giving
a connection back to the pool (:func:`release`), breaking a blocked read
from another thread (:func:`shutdown_reader`) and TCP keepalive on watch
connections (:func:`enable_keepalive`).

Internal module: use :class:`~pyinformers.api._client.ResourceClient`.

Thread-safety: stateless functions; the urllib3 pool is thread-safe.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

import orjson

import pyinformers.api._http
from pyinformers.api._errors import error_from_status
from pyinformers.api._throttle import client_throttle

__all__ = [
    "CONNECT_TIMEOUT",
    "KEEPALIVE_IDLE",
    "KEEPALIVE_INTERVAL",
    "KEEPALIVE_COUNT",
    "send",
    "release",
    "shutdown_reader",
    "raise_for_status",
    "read_json",
    "enable_keepalive",
    "set_read_timeout",
]

#: Seconds to establish a connection before giving up (every request).
CONNECT_TIMEOUT = 30.0

#: TCP keepalive of watch connections: the first probe after this many idle seconds ...
KEEPALIVE_IDLE = 30
#: ... then one every this many seconds ...
KEEPALIVE_INTERVAL = 10
#: ... and the connection is declared dead after this many unanswered probes (about 60 s in all).
KEEPALIVE_COUNT = 3


def send(
    api_client: Any,
    method: str,
    path: str,
    query: Sequence[tuple[str, Any]] = (),
    *,
    headers: dict | None = None,
    body: Any = None,
    timeout: Any = None,
) -> Any:
    """Send one request through ``api_client`` and return the raw ``urllib3`` response.

    The body is not read (``preload_content=False``): the caller reads or streams
    it and releases the connection. Status codes are not checked here.
    """
    throttle = client_throttle(api_client)
    if throttle is not None:  # off by default (see pyinformers.api._throttle)
        throttle.wait()
    header_params = {"Accept": "application/json"}
    if headers:
        header_params.update(headers)
    query_params = list(query)
    # a write: the lean path, where it behaves exactly alike (pyinformers.api._http)
    if method != "GET":
        lean = pyinformers.api._http.lean_requests(api_client)
        if lean is not None:
            answer = lean.request(method, path, query_params, body, header_params, timeout)
            # None: redirected, nothing written; the official path follows the redirect
            if answer is not None:
                return answer
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
    # kubernetes <= 36: one call_api with the legacy keyword options. That client raises
    # ApiException for a non-2xx answer (after reading its body); hand the answer back as a
    # response instead, so the caller turns it into our typed error like any other.
    from kubernetes.client.exceptions import ApiException

    try:
        return api_client.call_api(
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
    except ApiException as err:
        if not err.status:  # no answer at all (the client's wrapping of a TLS error)
            raise
        return _Answered(err.status, err.reason or "", err.body, err.headers)


class _Answered:
    """An error answer the pre-37 client already read, shaped like the urllib3 response we expect."""

    def __init__(self, status: int, reason: str, body: Any, headers: Any) -> None:
        self.status = status
        self.reason = reason
        self._body = body.encode() if isinstance(body, str) else (body or b"")
        self.headers = headers or {}

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        body, self._body = self._body, b""
        return body

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def release(response: Any, *, reusable: bool) -> None:
    """Give the connection back to the pool; close it first unless it is clean for reuse."""
    try:
        if not reusable:
            response.close()
        response.release_conn()
    except Exception:  # already closed or released: nothing left to give back
        pass


def shutdown_reader(response: Any) -> None:
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


def enable_keepalive(response: Any) -> bool:
    """Turn on TCP keepalive on the connection under ``response``; True if it could.

    A watch can be silent for minutes, so a peer that vanished (a host gone,
    a NAT entry dropped) is otherwise noticed only when the read timeout ends
    it. With keepalive the kernel probes the idle connection and fails the
    blocked read about :data:`KEEPALIVE_IDLE` + :data:`KEEPALIVE_INTERVAL` x
    :data:`KEEPALIVE_COUNT` seconds after the peer stopped answering. It
    cannot see a peer that answers probes but sends nothing (a stalled proxy):
    that is the reflector's stall timeout's job. Best effort: options the
    platform lacks are skipped.
    """
    sock = _socket_of(response)
    if sock is None:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (
            ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
            ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
            ("TCP_KEEPCNT", KEEPALIVE_COUNT),
        ):
            if hasattr(socket, option):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    except OSError:
        return False
    return True


def set_read_timeout(response: Any, seconds: float | None) -> bool:
    """Give every later read of ``response``'s body this timeout (None: block); True if it could.

    urllib3 applies one read timeout to the whole exchange; a watch wants a
    short one while it waits for the answer's headers (a server sends them at
    once) and a long one for the stream that follows.
    """
    sock = _socket_of(response)
    if sock is None:
        return False
    try:
        sock.settimeout(seconds)
    except OSError:
        return False
    return True


def _socket_of(response: Any) -> Any:
    connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
    return getattr(connection, "sock", None)


def raise_for_status(response: Any) -> None:
    """Raise the typed ApiError for a non-2xx response (reading and releasing its body)."""
    status = response.status
    if 200 <= status < 300:
        return
    try:
        data = response.read()
    finally:
        release(response, reusable=False)
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


def read_json(response: Any) -> Any:
    raise_for_status(response)
    try:
        data = response.read()
    finally:
        release(response, reusable=True)
    return orjson.loads(data) if data else None
