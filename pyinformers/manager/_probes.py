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
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "ANY_PORT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_READ_TIMEOUT",
    "Guard",
    "PostRoute",
    "ProbeServer",
    "Route",
    "TLSFiles",
]

_log = logging.getLogger("pyinformers.manager._probes")

#: A route: ``fn(query) -> (status, content_type, body)``; ``query`` maps parameter -> values.
Route = Callable[[Mapping[str, list]], "tuple[int, str, bytes]"]

#: A POST route: ``fn(body) -> (status, content_type, body)``; the body is read whole (at most ``max_body`` bytes).
PostRoute = Callable[[bytes], "tuple[int, str, bytes]"]

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

#: Largest POST body accepted by default (the webhook server sets its own).
DEFAULT_MAX_BODY = 1024 * 1024

#: Bytes of a too-large body still read (and dropped) so that the client gets to read the 413, as Go's server does.
_DISCARD = 256 * 1024


class _Conn:
    """One accepted connection as the reaper sees it: its socket, and its deadline while not in a request.

    ``deadline`` is None while a request is being answered (the reaper leaves
    it alone); otherwise the time by which the handshake, the next request's
    headers and body, or the idle keep-alive must be over.
    """

    __slots__ = ("sock", "deadline", "accepted")

    def __init__(self, sock: Any, deadline: float) -> None:
        self.sock = sock
        self.deadline: float | None = deadline
        self.accepted = deadline


def _cut(sock: Any) -> None:
    """Shut ``sock`` down from another thread: its reader wakes with EOF (works under TLS too)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _Reaper:
    """Connections not in a request, cut when their deadline passes; thread-safe.

    One daemon thread wakes at the earliest deadline (at least every
    ``tick``). ``evict_oldest`` makes room at the connection cap.
    """

    def __init__(self, name: str, tick: float = 0.1) -> None:
        self._lock = threading.Condition(threading.Lock())
        self._conns: dict[int, _Conn] = {}  # id -> connection; guarded by _lock
        self._active = 0  # requests being answered; guarded by _lock
        self._stopped = False
        self._tick = tick
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, conn: _Conn) -> None:
        with self._lock:
            self._conns[id(conn)] = conn

    def remove(self, conn: _Conn) -> None:
        with self._lock:
            self._conns.pop(id(conn), None)

    def begin(self, conn: _Conn) -> bool:
        """A request starts on ``conn``: False when stopping (answer nothing more)."""
        with self._lock:
            conn.deadline = None
            if self._stopped:
                return False
            self._active += 1
            return True

    def end(self, conn: _Conn, idle_deadline: float) -> None:
        with self._lock:
            self._active -= 1
            conn.deadline = idle_deadline
            self._lock.notify_all()

    def evict_oldest(self) -> bool:
        """Cut the longest-waiting connection not in a request; False when every one is busy."""
        with self._lock:
            waiting = [c for c in self._conns.values() if c.deadline is not None]
            if not waiting:
                return False
            oldest = min(waiting, key=lambda c: c.accepted)
            oldest.deadline = 0.0
        _cut(oldest.sock)
        return True

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._stopped:
                    return
                now = time.monotonic()
                late = [
                    c for c in self._conns.values() if c.deadline is not None and c.deadline <= now
                ]
                pending = [c.deadline for c in self._conns.values() if c.deadline is not None]
                wait = min([self._tick, *(d - now for d in pending)])
                if not late:
                    self._lock.wait(max(0.005, wait))
                    continue
            for conn in late:
                _cut(conn.sock)

    def drain(self, timeout: float) -> bool:
        """Stop: cut every connection not in a request, wait for requests in flight; True when none is left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
            idle = [c for c in self._conns.values() if c.deadline is not None]
        for conn in idle:
            _cut(conn.sock)
        with self._lock:
            while self._active:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
        return True


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    @property
    def conn(self) -> _Conn | None:
        return getattr(self.server.local, "conn", None)

    def _guarded(self, path: str) -> bool:
        """Run the guard; True when it answered (the request is done)."""
        guard = self.server.guard
        if guard is None:
            return False
        try:
            denied = guard(self.command, path, self.headers)
        except Exception:
            _log.exception("the guard of %s failed", path)
            denied = (500, _TEXT, b"internal error\n")
        if denied is not None:
            self._send(*denied)
            return True
        return False

    def _begin(self) -> bool:
        conn = self.conn
        if conn is not None and not self.server.reaper.begin(conn):
            self.close_connection = True
            return False
        return True

    def _end(self) -> None:
        conn = self.conn
        if conn is not None:
            self.server.reaper.end(conn, time.monotonic() + self.server.read_timeout)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's naming)
        if not self._begin():
            return
        try:
            self._get()
        finally:
            self._end()

    def _get(self) -> None:
        parts = urlsplit(self.path)
        route = self.server.routes.get(parts.path)
        if route is None:
            self._send(404, _TEXT, b"not found\n")
            return
        if self._guarded(parts.path):
            return
        try:
            status, content_type, body = route(parse_qs(parts.query, keep_blank_values=True))
        except Exception:
            _log.exception("handler for %s failed", parts.path)
            status, content_type, body = 500, _TEXT, b"internal error\n"
        self._send(status, content_type, body)

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        length_text = self.headers.get("Content-Length")
        if (
            self.headers.get("Transfer-Encoding")
            or length_text is None
            or not length_text.strip().isdigit()
        ):
            self.close_connection = True
            self._send(
                411 if length_text is None else 400,
                _TEXT,
                b"a request body needs a Content-Length\n",
            )
            return
        length = int(length_text)
        if length > self.server.max_body + _DISCARD:
            self.close_connection = True
            self._send(
                413, _TEXT, f"the body is larger than {self.server.max_body} bytes\n".encode()
            )
            return
        body = self.rfile.read(
            length
        )  # under the connection's deadline; read even when refused, so the
        if len(body) != length:  # client reads the answer rather than a reset
            self.close_connection = True
            return
        route = self.server.post_routes.get(path)
        if route is None:
            self._send(
                404 if path not in self.server.routes else 405,
                _TEXT,
                f"no POST route {path}\n".encode(),
            )
            return
        if length > self.server.max_body:
            self.close_connection = True
            self._send(
                413, _TEXT, f"the body is larger than {self.server.max_body} bytes\n".encode()
            )
            return
        if not self._begin():
            return
        try:
            if self._guarded(path):
                return
            try:
                status, content_type, answer = route(body)
            except Exception:
                _log.exception("handler for %s failed", path)
                status, content_type, answer = 500, _TEXT, b"internal error\n"
            self._send(status, content_type, answer)
        finally:
            self._end()

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if self.close_connection:
            self.send_header("Connection", "close")
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
    post_routes: Mapping[str, PostRoute]
    guard: Guard | None
    read_timeout: float
    max_body: int
    evict_at_cap: bool
    tls: _ReloadingContext | None
    slots: threading.BoundedSemaphore
    reaper: _Reaper
    local: threading.local

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            # At the cap: make room by cutting the longest-waiting idle connection (a webhook server's
            # defence against a flood of half-open ones), else refuse the newcomer.
            if not (
                self.evict_at_cap and self.reaper.evict_oldest() and self.slots.acquire(timeout=1.0)
            ):
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
        try:  # a response is two writes (headers, body): without this, Nagle and the client's delayed
            request.setsockopt(
                socket.IPPROTO_TCP, socket.TCP_NODELAY, 1
            )  # ACK hold the body back 40 ms
        except OSError:
            pass
        conn = _Conn(
            request, time.monotonic() + self.read_timeout
        )  # handshake + first request's headers
        self.reaper.add(conn)
        self.local.conn = conn
        try:
            if self.tls is None:
                self.RequestHandlerClass(request, client_address, self)  # type: ignore[arg-type]  # typeshed wants Self
                return
            secure = self.tls.get().wrap_socket(
                request, server_side=True, do_handshake_on_connect=False
            )
            conn.sock = secure
            try:
                secure.do_handshake()  # under the deadline: the reaper cuts a handshake that never ends
                self.RequestHandlerClass(secure, client_address, self)  # type: ignore[arg-type]  # typeshed wants Self
            finally:
                secure.close()
        finally:
            self.local.conn = None
            self.reaper.remove(conn)

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
    :param read_timeout: seconds a connection may take for its TLS handshake
        and each request's headers and body, and may stay idle between
        requests, before it is closed (kept by a reaper thread, so a client
        dripping bytes cannot stretch it).
    :param max_connections: connections served at once; more are closed at
        accept, or with ``evict_at_cap`` the oldest one not in a request is
        closed to make room.
    :param post_routes: path -> :data:`PostRoute`, bodies of at most ``max_body`` bytes.
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
        post_routes: Mapping[str, PostRoute] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        evict_at_cap: bool = False,
    ) -> None:
        if read_timeout <= 0 or max_connections < 1 or max_body < 0:
            raise ValueError("read_timeout must be > 0, max_connections >= 1 and max_body >= 0")
        self.host = host
        self.port = port
        self.routes = dict(routes)
        self.post_routes = dict(post_routes or {})
        self.guard = guard
        self.tls = tls
        self.read_timeout = float(read_timeout)
        self.max_connections = int(max_connections)
        self.max_body = int(max_body)
        self.evict_at_cap = bool(evict_at_cap)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

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

    @property
    def serving(self) -> bool:
        """True from a successful :meth:`start` until :meth:`stop` begins."""
        return self._server is not None and not self._stopped

    def start(self) -> None:
        if self._server is not None:
            return
        tls = _ReloadingContext(self.tls) if self.tls is not None else None
        attributes: dict[str, Any] = {"request_queue_size": max(128, self.max_connections)}
        if ":" in self.host:  # an IPv6 literal such as "::"
            attributes["address_family"] = socket.AF_INET6
        server_class: Any = type("_BoundServer", (_Server,), attributes)
        server = server_class((self.host, 0 if self.port == ANY_PORT else self.port), _Handler)
        server.routes = self.routes
        server.post_routes = self.post_routes
        server.guard = self.guard
        server.read_timeout = self.read_timeout
        server.max_body = self.max_body
        server.evict_at_cap = self.evict_at_cap
        server.tls = tls
        server.slots = threading.BoundedSemaphore(self.max_connections)
        server.local = threading.local()
        port = server.server_address[1]
        server.reaper = _Reaper(f"pyinformers-http-{port}-reaper")
        server.reaper.start()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"pyinformers-http-{port}",
            daemon=True,
        )
        self._thread.start()
        paths = sorted({*self.routes, *self.post_routes})
        _log.info(
            "serving %s on %s://%s:%d%s",
            ", ".join(paths),
            self.scheme,
            self.host,
            port,
            " (authenticated)" if self.guard is not None else "",
        )

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop accepting, close idle connections, let requests in flight finish.

        True when the serving thread ended and no request was left within ``timeout``.
        """
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return True
        self._stopped = True
        deadline = time.monotonic() + max(0.0, timeout)
        server.shutdown()  # returns once serve_forever noticed (within its 0.1 s poll interval)
        thread.join(max(0.0, deadline - time.monotonic()))
        server.server_close()
        drained = server.reaper.drain(max(0.0, deadline - time.monotonic()))
        return drained and not thread.is_alive()

    def __repr__(self) -> str:
        address = self.address
        where = f"{self.scheme}://{address[0]}:{address[1]}" if address else "not started"
        return f"<ProbeServer {where} routes={sorted({*self.routes, *self.post_routes})}>"
