"""A tiny HTTP server for ``/metrics``, ``/healthz`` and ``/readyz``.

:class:`ProbeServer` serves a fixed table of GET routes, each a function
returning ``(status, content_type, body)``. It is what the
:class:`~pyinformers.controller.manager.Manager` exposes to Prometheus and to
the kubelet's probes; it has no other use and no dependencies beyond the
standard library.

Threading: ``serve_forever`` runs in a daemon thread named
``pyinformers-http-<port>``; each request is answered on its own short-lived
daemon thread (so a slow scraper cannot block a probe). Route functions must
therefore be thread-safe. :meth:`ProbeServer.stop` returns once the serving
thread has exited (bounded by its timeout).
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Mapping, Optional
from urllib.parse import parse_qs, urlsplit

__all__ = ["ProbeServer", "Route", "ANY_PORT"]

_log = logging.getLogger("pyinformers.controller.probes")

#: A route: ``fn(query) -> (status, content_type, body)``; ``query`` maps parameter -> values.
Route = Callable[[Mapping[str, list]], "tuple[int, str, bytes]"]

#: Pass as a port to bind any free port (tests); read the real one from ``address``.
ANY_PORT = -1


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's naming)
        parts = urlsplit(self.path)
        route = self.server.routes.get(parts.path)
        if route is None:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")
            return
        try:
            status, content_type, body = route(parse_qs(parts.query, keep_blank_values=True))
        except Exception:
            _log.exception("handler for %s failed", parts.path)
            status, content_type, body = 500, "text/plain; charset=utf-8", b"internal error\n"
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    routes: Mapping[str, Route]


class ProbeServer:
    """Serve ``routes`` (path -> :data:`Route`) on ``host:port`` until :meth:`stop`.

    ``port`` :data:`ANY_PORT` binds a free port. Binding happens in
    :meth:`start`, which raises ``OSError`` (address in use, permission) at
    once rather than failing later in a thread.
    """

    def __init__(self, host: str, port: int, routes: Mapping[str, Route]) -> None:
        self.host = host
        self.port = port
        self.routes = dict(routes)
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def address(self) -> Optional[tuple[str, int]]:
        """``(host, port)`` actually bound, or None before :meth:`start`."""
        server = self._server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        if self._server is not None:
            return
        server = _Server((self.host, 0 if self.port == ANY_PORT else self.port), _Handler)
        server.routes = self.routes
        self._server = server
        port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=f"pyinformers-http-{port}", daemon=True
        )
        self._thread.start()
        _log.info("serving %s on http://%s:%d", ", ".join(sorted(self.routes)), self.host, port)

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
        where = f"{address[0]}:{address[1]}" if address else "not started"
        return f"<ProbeServer {where} routes={sorted(self.routes)}>"
