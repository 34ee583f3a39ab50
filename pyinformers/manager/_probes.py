"""A small, network-hardened HTTP(S) server for ``/metrics``, ``/healthz`` and ``/readyz``.

:class:`ProbeServer` serves a fixed table of GET routes, each a function
returning ``(status, content_type, body)``. It is what the
:class:`~pyinformers.manager._manager.Manager` exposes to Prometheus and to
the kubelet's probes; it has no dependencies beyond the standard library.

What it guarantees to a network it does not trust:

* **read timeout**: a connection that sends nothing (a half-open client, an
  idle keep-alive) for ``read_timeout`` seconds (default
  :data:`DEFAULT_READ_TIMEOUT`) is closed, so idle sockets cannot pile up;
* **connection cap**: at most ``max_connections`` (default
  :data:`DEFAULT_MAX_CONNECTIONS`) are served at once; one more is closed at
  accept, without a thread, so a flood costs a bounded number of threads;
* **quiet disconnects**: a client that resets or drops its connection, times
  out or fails its TLS handshake is logged at DEBUG, never as a traceback;
* **optional TLS** (:class:`TLSFiles`): a certificate and key read from files
  and reloaded when either file changes (cert-manager rotating a Secret), the
  handshake done on the connection's own thread under the read timeout;
* **optional guard**: ``guard(method, path, headers)`` runs before any route
  and may answer instead of it (the metrics authentication filter,
  :mod:`pyinformers.manager._metrics_auth`).

The host to bind is the caller's choice; the Manager's defaults and why are
in docs/deploying.rst (all interfaces in a Pod, so the kubelet and Prometheus
reach the pod IP; ``127.0.0.1`` in tests).

Threading: ``serve_forever`` runs in a daemon thread named
``pyinformers-http-<port>``; each connection is served on its own short-lived
daemon thread (so a slow scraper cannot block a probe). Route and guard
functions must therefore be thread-safe. :meth:`ProbeServer.stop` returns once
the serving thread has exited (bounded by its timeout).
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "ANY_PORT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_READ_TIMEOUT",
    "Guard",
    "ProbeServer",
    "Route",
    "TLSFiles",
]

_log = logging.getLogger("pyinformers.manager._probes")

#: A route: ``fn(query) -> (status, content_type, body)``; ``query`` maps parameter -> values.
Route = Callable[[Mapping[str, list]], "tuple[int, str, bytes]"]

#: A guard: ``fn(method, path, headers)`` -> None to let the request through, or ``(status, content_type, body)``.
Guard = Callable[[str, str, Any], "tuple[int, str, bytes] | None"]

#: Pass as a port to bind any free port (tests); read the real one from ``address``.
ANY_PORT = -1

#: Seconds a connection may stay silent (headers not sent, idle keep-alive, slow handshake) before it is closed.
DEFAULT_READ_TIMEOUT = 10.0

#: Connections served at once; more are closed at accept. Prometheus and the kubelet need a handful.
DEFAULT_MAX_CONNECTIONS = 64

_QUIET = (ConnectionError, TimeoutError, ssl.SSLError, OSError)
_TEXT = "text/plain; charset=utf-8"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's naming)
        parts = urlsplit(self.path)
        route = self.server.routes.get(parts.path)
        if route is None:
            self._send(404, _TEXT, b"not found\n")
            return
        guard = self.server.guard
        if guard is not None:
            try:
                denied = guard(self.command, parts.path, self.headers)
            except Exception:
                _log.exception("the guard of %s failed", parts.path)
                denied = (500, _TEXT, b"internal error\n")
            if denied is not None:
                self._send(*denied)
                return
        try:
            status, content_type, body = route(parse_qs(parts.query, keep_blank_values=True))
        except Exception:
            _log.exception("handler for %s failed", parts.path)
            status, content_type, body = 500, _TEXT, b"internal error\n"
        self._send(status, content_type, body)

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        _log.debug("%s " + format, self.address_string(), *args)


@dataclass(frozen=True)
class TLSFiles:
    """A PEM certificate (chain) file and its private key file, for serving HTTPS.

    The files are read when the server starts (errors surface then) and read
    again whenever either file's modification time or size changes.
    """

    cert_file: str
    key_file: str

    def stamp(self) -> tuple:
        a, b = os.stat(self.cert_file), os.stat(self.key_file)
        return (a.st_mtime_ns, a.st_size, b.st_mtime_ns, b.st_size)

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


class _ReloadingContext:
    """The current ``SSLContext`` for :class:`TLSFiles`, rebuilt when the files change. Thread-safe."""

    def __init__(self, files: TLSFiles) -> None:
        self._files = files
        self._lock = threading.Lock()
        self._stamp = files.stamp()
        self._context = files.context()

    def get(self) -> ssl.SSLContext:
        with self._lock:
            try:
                stamp = self._files.stamp()
                if stamp != self._stamp:
                    self._context = self._files.context()
                    self._stamp = stamp
                    _log.info("reloaded the TLS certificate from %s", self._files.cert_file)
            except (OSError, ssl.SSLError) as err:  # mid-rotation: keep serving the old pair
                _log.warning(
                    "cannot reload the TLS certificate from %s (keeping the previous one): %s",
                    self._files.cert_file,
                    err,
                )
            return self._context


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    routes: Mapping[str, Route]
    guard: Guard | None
    read_timeout: float
    tls: _ReloadingContext | None
    slots: threading.BoundedSemaphore

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            _log.debug("connection cap reached: closing a connection from %s", client_address)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(self.read_timeout)
        if self.tls is None:
            self.RequestHandlerClass(request, client_address, self)  # type: ignore[arg-type]  # typeshed wants Self
            return
        secure = self.tls.get().wrap_socket(
            request, server_side=True
        )  # handshake under the read timeout
        try:
            self.RequestHandlerClass(secure, client_address, self)  # type: ignore[arg-type]  # typeshed wants Self
        finally:
            secure.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        err = sys.exc_info()[1]
        if isinstance(err, _QUIET):
            _log.debug("connection from %s ended: %s", client_address, err or type(err).__name__)
            return
        _log.error("serving %s failed", client_address, exc_info=True)


class ProbeServer:
    """Serve ``routes`` (path -> :data:`Route`) on ``host:port`` until :meth:`stop`.

    ``port`` :data:`ANY_PORT` binds a free port. Binding happens in
    :meth:`start`, which raises ``OSError`` (address in use, permission, or
    unreadable TLS files) at once rather than failing later in a thread.

    :param guard: runs before every route (see :data:`Guard`).
    :param tls: serve HTTPS with these files (reloaded on change); None: HTTP.
    :param read_timeout: seconds of silence after which a connection is closed.
    :param max_connections: connections served at once; more are closed at accept.
    """

    def __init__(
        self,
        host: str,
        port: int,
        routes: Mapping[str, Route],
        *,
        guard: Guard | None = None,
        tls: TLSFiles | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if read_timeout <= 0 or max_connections < 1:
            raise ValueError("read_timeout must be > 0 and max_connections >= 1")
        self.host = host
        self.port = port
        self.routes = dict(routes)
        self.guard = guard
        self.tls = tls
        self.read_timeout = float(read_timeout)
        self.max_connections = int(max_connections)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` actually bound, or None before :meth:`start`."""
        server = self._server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return str(host), int(port)

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    def start(self) -> None:
        if self._server is not None:
            return
        tls = _ReloadingContext(self.tls) if self.tls is not None else None
        server_class: Any = _Server
        if ":" in self.host:  # an IPv6 literal such as "::"
            server_class = type("_Server6", (_Server,), {"address_family": socket.AF_INET6})
        server = server_class((self.host, 0 if self.port == ANY_PORT else self.port), _Handler)
        server.routes = self.routes
        server.guard = self.guard
        server.read_timeout = self.read_timeout
        server.tls = tls
        server.slots = threading.BoundedSemaphore(self.max_connections)
        self._server = server
        port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"pyinformers-http-{port}",
            daemon=True,
        )
        self._thread.start()
        _log.info(
            "serving %s on %s://%s:%d%s",
            ", ".join(sorted(self.routes)),
            self.scheme,
            self.host,
            port,
            " (authenticated)" if self.guard is not None else "",
        )

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop serving and close the socket; True when the serving thread ended within ``timeout``."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return True
        server.shutdown()  # returns once serve_forever noticed (within its 0.1 s poll interval)
        thread.join(max(0.0, timeout))
        server.server_close()
        return not thread.is_alive()

    def __repr__(self) -> str:
        address = self.address
        where = f"{self.scheme}://{address[0]}:{address[1]}" if address else "not started"
        return f"<ProbeServer {where} routes={sorted(self.routes)}>"
