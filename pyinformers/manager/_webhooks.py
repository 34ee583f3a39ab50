"""The webhook server: a :class:`~pyinformers.webhook.Webhooks` served over HTTPS for the API server.

:class:`WebhookServer` is the Manager's :class:`~pyinformers.manager._probes.ProbeServer`
(the machinery ``/metrics`` and the probes use) with POST routes: one per
admission webhook (``/mutate/NAME``, ``/validate/NAME``) and ``/convert``
when there are conversions. It inherits that server's defences:

* HTTPS only, HTTP/1.1 with keep-alive, the certificate and key read from
  files and reloaded when they change (cert-manager rotating a Secret);
* a deadline for the TLS handshake and the request headers and body
  (``read_timeout``) and for idle keep-alive connections, enforced by one
  reaper thread, so a handshake that never finishes or a client that drips
  its headers is cut;
* a connection cap; at the cap the oldest connection that is not in a
  request is closed to make room, so 1,000 half-open connections cannot lock
  the API server out;
* bodies bounded (``max_body``, 413 beyond), 400 with a one-line reason for
  a body that is not a review, 404 for unknown paths;
* :meth:`WebhookServer.stop` stops accepting, closes idle connections and
  lets reviews in flight finish (bounded by its timeout).

Threading: as the ProbeServer (a thread per connection); the registries'
handlers run on those threads and must be thread-safe. ``reviews`` counts
the answered reviews per path (read without a lock: a figure for tests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pyinformers.manager._probes import (
    DEFAULT_READ_TIMEOUT,
    PostRoute,
    ProbeServer,
    TLSFiles,
)
from pyinformers.webhook import Webhooks

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_WEBHOOK_PORT", "WebhookServer"]

#: Largest review accepted: kube-apiserver's 3 MiB request limit, twice (object and oldObject), plus room.
DEFAULT_MAX_BODY = 7 * 1024 * 1024

#: controller-runtime's default webhook port.
DEFAULT_WEBHOOK_PORT = 9443

#: Connections served at once: the API servers of a cluster keep a few each.
DEFAULT_WEBHOOK_CONNECTIONS = 256


class WebhookServer:
    """Serve ``webhooks`` (one registry or several) on ``https://host:port``.

    :param tls: the serving certificate and key files (required: the API
        server only calls webhooks over HTTPS).
    :param port: :data:`~pyinformers.manager.ANY_PORT` binds a free port.
    """

    def __init__(
        self,
        webhooks: Webhooks | Sequence[Webhooks],
        host: str = "0.0.0.0",
        port: int = DEFAULT_WEBHOOK_PORT,
        *,
        tls: TLSFiles,
        max_body: int = DEFAULT_MAX_BODY,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_connections: int = DEFAULT_WEBHOOK_CONNECTIONS,
    ) -> None:
        if tls is None:
            raise ValueError(
                "the webhook server needs a certificate and key (the API server calls webhooks over HTTPS)"
            )
        registries = [webhooks] if isinstance(webhooks, Webhooks) else list(webhooks)
        routes: dict[str, PostRoute] = {}
        for registry in registries:
            registry.check()
            for path in registry.paths():
                if path in routes:
                    raise ValueError(f"two registries serve {path}")
                routes[path] = self._route(registry, path)
        self.webhooks = registries
        self.host = host
        self.port = port
        self.reviews: Counter[str] = Counter()
        self._server = ProbeServer(
            host,
            port,
            {},
            post_routes=routes,
            tls=tls,
            read_timeout=read_timeout,
            max_connections=max_connections,
            max_body=max_body,
            evict_at_cap=True,
        )

    def _route(self, registry: Webhooks, path: str) -> PostRoute:
        def answer(body: bytes) -> tuple[int, str, bytes]:
            result = registry.handle(path, body)
            self.reviews[path] += 1
            return result

        return answer

    @property
    def address(self) -> tuple[str, int] | None:
        return self._server.address

    @property
    def url(self) -> str:
        """``https://HOST:PORT`` as the API server should reach it (a wildcard bind becomes 127.0.0.1)."""
        address = self.address
        if address is None:
            raise RuntimeError("the webhook server is not started")
        host = address[0] if address[0] not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"https://{'[' + host + ']' if ':' in host else host}:{address[1]}"

    @property
    def serving(self) -> bool:
        """True between a successful :meth:`start` and :meth:`stop` (the readiness check)."""
        return self._server.serving

    def start(self) -> None:
        """Bind and serve; ``OSError`` at once when the port or the TLS files are unusable."""
        self._server.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop accepting, let reviews in flight finish; True when all ended within ``timeout``."""
        return self._server.stop(timeout=timeout)

    def __repr__(self) -> str:
        address = self.address
        where = f"https://{address[0]}:{address[1]}" if address else "not started"
        return (
            f"<WebhookServer {where} paths={sorted(p for w in self.webhooks for p in w.paths())}>"
        )
