"""``ApiServer``: the in-process Kubernetes API server, assembled and run.

Composition: a :class:`~pyinformers.testing.apiserver._storage.Store` (objects, the one
resourceVersion, history), a :class:`~pyinformers.testing.apiserver._registry.Registry`
(built-ins and CRDs), a :class:`~pyinformers.testing.apiserver._watch.WatchHub`, the
:class:`~pyinformers.testing.apiserver._rest.RestApi` semantics, a
:class:`~pyinformers.testing.apiserver._gc.GarbageCollector`, optionally a
:class:`~pyinformers.testing.apiserver._workloads.WorkloadSimulator`, and the HTTP layer
(:mod:`pyinformers.testing.apiserver._httpd`) on 127.0.0.1.

Threads (all daemons): ``pyinformers-apiserver-accept-<port>`` accepts
connections, ``pyinformers-apiserver-conn-<n>`` serve them,
``pyinformers-apiserver-gc`` and ``pyinformers-apiserver-workloads`` do the
cluster's background work. :meth:`ApiServer.stop` cuts every open connection
(watch streams included) and joins them all.

Thread-safety: every public method may be called from any thread while the
server runs.
"""

from __future__ import annotations

import base64
import os
import threading
from typing import Any

from pyinformers.clock import REAL_CLOCK, Clock
from pyinformers.testing.apiserver._faults import Faults
from pyinformers.testing.apiserver._gc import GarbageCollector
from pyinformers.testing.apiserver._http_connections import HttpServer
from pyinformers.testing.apiserver._httpd import Dispatcher, RequestRecord
from pyinformers.testing.apiserver._registry import Registry
from pyinformers.testing.apiserver._rest import RestApi
from pyinformers.testing.apiserver._storage import Store
from pyinformers.testing.apiserver._watch import WatchHub
from pyinformers.testing.apiserver._workloads import WorkloadSimulator

__all__ = ["ApiServer"]

_CONTEXT = "pyinformers-testing"
_INITIAL_NAMESPACES = ("default", "kube-system", "kube-public")


class ApiServer:
    """An in-process Kubernetes API server over real HTTP.

    ``bookmark_interval`` (seconds) is how often watches that allow bookmarks
    get one (the real server: about a minute). ``compact_every`` turns on
    automatic compaction every N writes; ``history_limit`` caps the history
    in any case. ``max_watch_queue`` is how many events a watcher may fall
    behind before the server closes its watch. ``workload_delay`` is how long
    simulated Deployments take to become ready. ``clock`` supplies the wall
    time written into timestamps and the time watches measure
    ``timeoutSeconds`` and bookmarks in (with a
    :class:`~pyinformers.clock.FakeClock`, watches end and bookmarks come only
    when the test steps the clock). With ``namespace_defaults=True`` every
    namespace holds the ``kube-root-ca.crt`` ConfigMap and the ``default``
    ServiceAccount from its creation on, as on a real cluster (off by default
    so that suites counting the objects of a namespace keep their counts).
    ``header_timeout`` (seconds, 10 by default, as the Manager's servers)
    bounds how long a new connection may take to send a request's headers (a
    TLS handshake included), so half-open connections cannot pile up;
    ``idle_timeout`` closes a keep-alive connection idle that long between
    requests, or a stalled request, and cuts a watch whose client stops reading. ``tls=(certfile, keyfile)``
    serves HTTPS with that certificate (the kubeconfig then trusts it; see
    :func:`pyinformers.testing.apiserver._tls.self_signed_certificate`): ``kubectl``
    sends a bearer token only over TLS.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        simulate_workloads: bool = False,
        workload_delay: float = 0.5,
        bookmark_interval: float = 1.0,
        compact_every: int | None = None,
        history_limit: int = 100_000,
        max_watch_queue: int = 10_000,
        clock: Clock | None = None,
        seed: int | None = None,
        namespace_defaults: bool = False,
        idle_timeout: float | None = 60.0,
        header_timeout: float | None = 10.0,
        tls: tuple[str, str] | None = None,
    ) -> None:
        if bookmark_interval <= 0:
            raise ValueError("bookmark_interval must be positive")
        if max_watch_queue < 1:
            raise ValueError("max_watch_queue must be at least 1")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive or None")
        if header_timeout is not None and header_timeout <= 0:
            raise ValueError("header_timeout must be positive or None")
        self._header_timeout = header_timeout
        self._host = host
        self._requested_port = port
        self._idle_timeout = idle_timeout
        self._tls = tls
        self._token = token
        self._clock = clock or REAL_CLOCK
        self.store = Store(history_limit=history_limit, compact_every=compact_every)
        self.registry = Registry()
        self.hub = WatchHub(self.store)
        self.rest = RestApi(
            self.store,
            self.registry,
            self.hub,
            time_func=self._clock.time,
            namespace_defaults=namespace_defaults,
        )
        self.faults = Faults(seed=seed)
        self._stopping = threading.Event()
        self._dispatcher = Dispatcher(
            self.rest,
            self.registry,
            self.hub,
            self.faults,
            token=token,
            bookmark_interval=bookmark_interval,
            max_watch_queue=max_watch_queue,
            stopping=self._stopping,
            clock=self._clock,
        )
        self.faults._bind(lambda: self.hub.close_all("dropped"))
        self._gc = GarbageCollector(self.rest)
        self._workloads = (
            WorkloadSimulator(self.rest, delay=workload_delay, time_func=self._clock.time)
            if simulate_workloads
            else None
        )
        self._httpd: HttpServer | None = None
        self._accept_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        namespaces = self.registry.lookup("", "v1", "namespaces")
        assert namespaces is not None  # a built-in resource
        for name in _INITIAL_NAMESPACES:
            self.rest.create(namespaces, None, {"metadata": {"name": name}})

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ApiServer:
        """Listen and serve (returns self). Raises RuntimeError if already started."""
        with self._lock:
            if self._httpd is not None or self._stopping.is_set():
                raise RuntimeError("an ApiServer can be started once")
            self._httpd = HttpServer(
                (self._host, self._requested_port),
                self._dispatcher,
                idle_timeout=self._idle_timeout,
                header_timeout=self._header_timeout,
                tls=self._tls,
            )
            self._gc.start()
            if self._workloads is not None:
                self._workloads.start()
            self._accept_thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"pyinformers-apiserver-accept-{self.port}",
                daemon=True,
            )
            self._accept_thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, cut open connections and watches, join every thread. Idempotent."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._stopping.set()
            httpd = self._httpd
        self.hub.close_all("stopped")
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            httpd.close_connections(timeout)
        if self._accept_thread is not None:
            self._accept_thread.join(timeout)
        self._gc.stop(timeout)
        if self._workloads is not None:
            self._workloads.stop(timeout)

    def __enter__(self) -> ApiServer:
        if self._httpd is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None and not self._stopping.is_set()

    def __repr__(self) -> str:
        state = "running" if self.running else ("stopped" if self._stopping.is_set() else "new")
        where = f" {self.url}" if self._httpd is not None else ""
        return f"<ApiServer {state}{where} rv={self.store.current_rv} watches={self.hub.count()}>"

    # -- addresses and credentials ----------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        scheme = "https" if self._tls else "http"
        return f"{scheme}://{self._host}:{self.port}"

    @property
    def token(self) -> str | None:
        return self._token

    def kubeconfig(self, *, namespace: str = "default") -> dict:
        """A kubeconfig (as a dict) whose current context talks to this server."""
        user: dict[str, Any] = {"token": self._token} if self._token else {}
        cluster: dict[str, Any] = {"server": self.url}
        if self._tls:
            with open(self._tls[0], "rb") as f:
                cluster["certificate-authority-data"] = base64.b64encode(f.read()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": _CONTEXT, "cluster": cluster}],
            "users": [{"name": _CONTEXT, "user": user}],
            "contexts": [
                {
                    "name": _CONTEXT,
                    "context": {"cluster": _CONTEXT, "user": _CONTEXT, "namespace": namespace},
                }
            ],
            "current-context": _CONTEXT,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str]) -> str:
        """Write :meth:`kubeconfig` as YAML to ``path`` (mode 0600); returns the path."""
        import yaml

        path = os.fspath(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(self.kubeconfig(), f, default_flow_style=False)
        return path

    def api_client(self) -> Any:
        """A new ``kubernetes.client.ApiClient`` configured from :meth:`kubeconfig`."""
        from kubernetes import config

        return config.new_client_from_config_dict(self.kubeconfig())

    # -- state for tests -------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self.store.current_rv)

    def compact(self, resource_version: int | str | None = None) -> int:
        """Forget history up to ``resource_version`` (default: now); returns the compaction point."""
        return self.store.compact(None if resource_version is None else int(resource_version))

    def restart(self) -> int:
        """Act out a kube-apiserver restart: end every watch cleanly and start every watch cache anew.

        Stored objects and resourceVersions stay (etcd keeps them); a watch from
        a resourceVersion older than now then gets an ``ERROR`` 410 event, as
        from a restarted real server. Returns how many watches were ended.
        """
        # A starting kube-apiserver writes its identity lease before it serves.
        leases = self.registry.lookup("coordination.k8s.io", "v1", "leases")
        if leases is not None:
            self.rest.record_apiserver_lease(leases, self._clock.time())
        return self.hub.restart()

    def objects(self, plural: str, group: str = "", namespace: str | None = None) -> list[dict]:
        """The current objects of a resource (sorted by namespace/name); do not mutate them."""
        rt = self.registry.find(plural, group)
        if rt is None:
            raise KeyError(f"no resource {group}/{plural} is served")
        return self.store.objects(rt.storage_key, namespace)

    @property
    def requests(self) -> list[RequestRecord]:
        """The log of answered requests, oldest first (bounded)."""
        return self._dispatcher.requests()

    def clear_requests(self) -> None:
        self._dispatcher.clear_requests()

    @property
    def counters(self) -> dict[str, int]:
        """Counters: ``requests``, ``verb:<verb>``, ``status:<code>``, ``watches``, ``watches_open``,
        ``watches:<close reason>``, ``watch_events_sent``, ``faults:errors``, ``faults:throttled``,
        and ``watches_stalled`` (watches parked by ``faults.stall_watches`` right now)."""
        return self._dispatcher.counters()

    def gc_idle(self) -> bool:
        """True when the garbage collector has nothing queued or in progress."""
        return self._gc.idle()
