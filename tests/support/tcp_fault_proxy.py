"""A TCP proxy for network-fault tests against either server: cut every connection abruptly, or stall it.

``TcpFaultProxy(host, port)`` listens on a free loopback port and forwards
each accepted connection, byte for byte, to ``host:port`` (TLS passes
through untouched, so a client that trusts the server trusts the proxy on
the same address). Faults act on every open connection at once:

* :meth:`reset` closes both sides with ``SO_LINGER`` 0, so each peer gets a
  TCP RST mid-stream (a crashed node or load balancer, not a clean close);
* :meth:`stall` stops forwarding in both directions while keeping the
  connections open (a half-dead proxy); :meth:`resume` forwards again;
* :attr:`delay` (seconds, default 0) holds every byte from the server back
  that long before the client gets it (a slow watch: an informer that
  trails the server), requests still go out at once.

:func:`client_through` builds an ``ApiClient`` for a ``k8s`` fixture whose
connections go through a new proxy.

Threading: one acceptor thread, one pump thread per direction of each
connection; the fault methods may be called from any thread.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

_CHUNK = 65536
_POLL = 0.05


class TcpFaultProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._flowing = threading.Event()
        self._flowing.set()
        #: Seconds each byte from the server waits before it is forwarded to the client.
        self.delay = 0.0
        self._closed = threading.Event()
        #: Connections accepted so far (a client that reconnects adds one).
        self.accepted = 0
        self._acceptor = threading.Thread(target=self._accept, name="tcp-fault-proxy", daemon=True)
        self._acceptor.start()

    def url(self, scheme: str) -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def reset(self) -> int:
        """Cut every open connection with a TCP RST on both sides; returns how many were cut."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _abort(sock)
        return len(pairs)

    def stall(self) -> None:
        """Stop forwarding bytes (connections stay open, nothing moves)."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        """Stop accepting (new connections are refused) and cut every open one."""
        self._closed.set()
        self._flowing.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the acceptor: close() alone would not
        except OSError:
            pass
        self._acceptor.join(5)
        self._listener.close()
        self.reset()

    def __enter__(self) -> TcpFaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the threads ----------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._closed.is_set():
                _abort(client)
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                _abort(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
                self.accepted += 1
            for source, sink, downstream in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(
                    target=self._pump,
                    args=(source, sink, downstream),
                    daemon=True,
                    name="tcp-fault-proxy-pump",
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, downstream: bool = False) -> None:
        try:
            while not self._closed.is_set():
                if not self._flowing.is_set():
                    self._flowing.wait(_POLL)
                    continue
                ready, _, _ = select.select([source], [], [], _POLL)
                if not ready:
                    continue
                data: bytes | None = source.recv(_CHUNK)
                received = time.monotonic()
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                if (
                    downstream and self.delay > 0
                ):  # a byte is late by the delay, never by more than twice it
                    self._closed.wait(max(0.0, received + self.delay - time.monotonic()))
                sink.sendall(data)
        except (OSError, ValueError):  # cut by reset(), or the peer went away
            return


def _abort(sock: socket.socket) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def client_through(
    k8s: Any, proxy_factory: Callable[[str, int], TcpFaultProxy]
) -> tuple[Any, TcpFaultProxy]:
    """An ApiClient for ``k8s`` whose connections go through a new TcpFaultProxy; returns (client, proxy)."""
    import copy

    from kubernetes import config

    kubeconfig = copy.deepcopy(k8s.kubeconfig())
    cluster = kubeconfig["clusters"][0]["cluster"]
    target = urlsplit(cluster["server"])
    proxy = proxy_factory(target.hostname, target.port)
    cluster["server"] = proxy.url(target.scheme)
    return config.new_client_from_config_dict(kubeconfig), proxy
