"""The Manager's HTTP endpoints: ``/metrics`` (Prometheus text), ``/healthz`` and ``/readyz``.

:class:`EndpointServers` decides which :class:`~pyinformers.manager._probes.ProbeServer`
to run (one per port; metrics and probes share one when their ports are
equal), renders probe answers the way the Kubernetes API server does (``ok``,
or one ``[+]``/``[-]`` line per check with ``?verbose`` or on failure), and
starts and stops the servers. Internal module, used by
:class:`~pyinformers.manager._manager.Manager`.

Threading: :meth:`EndpointServers.start` and :meth:`EndpointServers.stop` may
race (a manager stopped while starting): once ``stop_requested`` is set no
new server starts, and :meth:`stop` stops every server that did.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from pyinformers.api._config import ConfigurationError, one_line
from pyinformers.manager._checks import Check
from pyinformers.manager._probes import ANY_PORT, Guard, ProbeServer, TLSFiles

__all__ = ["EndpointServers", "validate_port"]

log = logging.getLogger("pyinformers.manager._manager")

_TEXT = "text/plain; charset=utf-8"


def validate_port(what: str, port: Any) -> None:
    """Raise ValueError unless ``port`` is a port number, 0 (off) or :data:`ANY_PORT`."""
    if (
        isinstance(port, bool)
        or not isinstance(port, int)
        or not (port == ANY_PORT or 0 <= port <= 65535)
    ):
        raise ValueError(f"{what} must be a port number (0 turns it off), got {port!r}")


def render_probe(name: str, checks: list[Check], query: Any) -> tuple[int, str, bytes]:
    """A probe's answer: 200 ``ok``, or every check line (``?verbose``, or 503 on failure)."""
    ok = all(passed for _, passed, _ in checks)
    if ok and "verbose" not in query:
        return 200, _TEXT, b"ok\n"
    lines = [
        (f"[+]{n} ok ({detail})" if detail else f"[+]{n} ok")
        if passed
        else f"[-]{n} failed: {detail}"
        for n, passed, detail in checks
    ]
    lines.append(f"{name} check passed" if ok else f"{name} check failed")
    return (200 if ok else 503), _TEXT, ("\n".join(lines) + "\n").encode()


class EndpointServers:
    """Serves ``/metrics`` from ``registry`` and the probes from the two check functions.

    :param metrics_port: 0 turns ``/metrics`` off; :data:`ANY_PORT` binds a free port.
    :param health_port: 0 turns ``/healthz`` and ``/readyz`` off.
    :param stop_requested: once set, :meth:`start` starts no further server.
    :param metrics_host: interface of ``/metrics`` (default ``bind_address``).
    :param health_host: interface of the probes (default ``bind_address``).
    :param metrics_guard: runs before ``/metrics`` (authentication/authorization).
    :param metrics_tls: serve ``/metrics`` over HTTPS with these files.

    Probes stay plain, unguarded HTTP for the kubelet: a secured ``/metrics``
    never shares their server (``ValueError`` when asked to share a port).
    """

    def __init__(
        self,
        bind_address: str,
        metrics_port: int,
        health_port: int,
        *,
        registry: Any,
        health_checks: Callable[[], list[Check]],
        ready_checks: Callable[[], list[Check]],
        stop_requested: threading.Event,
        metrics_host: str | None = None,
        health_host: str | None = None,
        metrics_guard: Guard | None = None,
        metrics_tls: TLSFiles | None = None,
    ) -> None:
        self.metrics_host = bind_address if metrics_host is None else metrics_host
        self.health_host = bind_address if health_host is None else health_host
        self._metrics_guard = metrics_guard
        self._metrics_tls = metrics_tls
        secured = metrics_guard is not None or metrics_tls is not None
        if (
            secured
            and metrics_port
            and metrics_port == health_port
            and metrics_port != ANY_PORT
            and self.metrics_host == self.health_host
        ):
            raise ValueError(
                f"a secured /metrics cannot share port {metrics_port} with the probes (they stay plain HTTP "
                "for the kubelet): give them different ports"
            )
        self.bind_address = bind_address
        self.metrics_port = metrics_port
        self.health_port = health_port
        self._registry = registry
        self._health_checks = health_checks
        self._ready_checks = ready_checks
        self._stop_requested = stop_requested
        self._lock = threading.Lock()
        self._servers: list[ProbeServer] = []  # every server started; guarded by _lock
        self.metrics_server: ProbeServer | None = None
        self.health_server: ProbeServer | None = None

    def _routes(self, *, metrics: bool, health: bool) -> dict:
        routes: dict = {}
        if metrics:
            routes["/metrics"] = lambda query: (
                200,
                CONTENT_TYPE_LATEST,
                generate_latest(self._registry),
            )
        if health:
            routes["/healthz"] = lambda query: render_probe("healthz", self._health_checks(), query)
            routes["/readyz"] = lambda query: render_probe("readyz", self._ready_checks(), query)
        return routes

    def _serve(self, host: str, port: int, *, metrics: bool, health: bool) -> ProbeServer | None:
        """Start one endpoint server, unless a stop was requested (then None)."""
        secure = metrics and not health
        server = ProbeServer(
            host,
            port,
            self._routes(metrics=metrics, health=health),
            guard=self._metrics_guard if secure else None,
            tls=self._metrics_tls if secure else None,
        )
        with self._lock:
            if self._stop_requested.is_set():
                return None
            server.start()
            self._servers.append(server)
        return server

    def start(self) -> None:
        """Start the servers; :class:`ConfigurationError` when a port cannot be bound."""
        metrics, health = self.metrics_port, self.health_port
        try:
            if (
                metrics
                and health
                and metrics == health
                and metrics != ANY_PORT
                and self.metrics_host == self.health_host
            ):
                self.metrics_server = self.health_server = self._serve(
                    self.metrics_host, metrics, metrics=True, health=True
                )
                return
            if metrics:
                self.metrics_server = self._serve(
                    self.metrics_host, metrics, metrics=True, health=False
                )
            if health:
                self.health_server = self._serve(
                    self.health_host, health, metrics=False, health=True
                )
        except OSError as err:
            raise ConfigurationError(
                f"cannot serve metrics/probes on {self.metrics_host}:{metrics} and {self.health_host}:{health}: "
                f"{one_line(err)}"
            ) from None

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop every server started; True when each stopped within ``timeout``."""
        with self._lock:  # start() adds no server once a stop was requested
            servers = list(self._servers)
        clean = True
        for server in servers:
            try:
                clean = server.stop(timeout=timeout) and clean
            except Exception:
                log.exception("stopping %r failed", server)
                clean = False
        return clean
