"""HTTP connections of the embedded API server: sockets, threads, request heads and timeouts.

Owns the connection layer under the dispatcher: :class:`HttpServer`, a
``ThreadingHTTPServer`` speaking HTTP/1.1 with keep-alive (and TLS when
given a certificate), and its request handler, which parses the request line
and headers itself (HTTP/1.0 and 1.1 only, at most ``_MAX_HEADERS`` lines of
``_MAX_HEADER_LINE`` bytes: 400 or 431 beyond) and hands each request to
:meth:`Dispatcher.handle <._httpd.Dispatcher.handle>`.

Invariants: a new connection, and each request's line and headers, get the
header timeout (never longer than the idle timeout); the body, the work, the
response and the wait for the next request get the idle timeout; a silent
connection is closed when its timeout passes. Every connection has one
daemon thread named ``pyinformers-apiserver-conn-<n>``, tracked until it ends.

Thread-safety: the table of open connections sits behind one lock, so
:meth:`HttpServer.close_connections` may cut them from any thread; each
handler belongs to its connection's thread.
"""

from __future__ import annotations

import itertools
import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyinformers.testing.apiserver._httpd import Dispatcher

__all__ = ["HttpServer"]

# The HTTP layer's one logger, named in the _httpd module docstring.
_log = logging.getLogger("pyinformers.testing.apiserver._httpd")


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
