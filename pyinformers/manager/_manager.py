"""The :class:`Manager`: run several controllers on one API client and one informer factory.

A program that runs controllers looks like this::

    manager = Manager()                       # kubeconfig, in-cluster, or ~/.kube/config
    manager.add(FooController(manager.factory))
    manager.add(BarController(manager.factory))
    manager.run()                             # until SIGTERM / SIGINT

:meth:`Manager.run`:

1. serves ``/metrics`` (Prometheus text) and ``/healthz`` / ``/readyz``
   (probes) over HTTP, so the probes answer while caches fill;
2. checks that the API server answers with our credentials, failing fast
   with one clear line when it does not;
3. starts every informer of the factory and waits until their caches sync,
   failing fast (:class:`ConfigurationError`) when the API server refuses a
   list or watch (401/403: missing RBAC, which retrying cannot fix), with
   the server's message naming the verb and resource;
4. starts every controller's workers;
5. on SIGTERM or SIGINT shuts everything down gracefully: controllers drain
   (in-flight reconciles finish within ``shutdown_timeout``), informers stop,
   the HTTP servers close, and ``run()`` returns, so the program exits 0.
   A second signal exits at once (status 1).

Garbage collection: unless ``tune_gc=False``, the manager applies
:mod:`pyinformers._gc_policy` for the process it runs: full collections become
rare when it starts, the synced caches are frozen out of the collector's reach
once they sync, and both are undone when it stops. ``make bench`` measures what
it changes (docs/performance.rst).

Probes: ``/healthz`` fails (503) when an informer's reflector keeps failing
or a controller lost a worker thread; ``/readyz`` fails (503) until every
cache has synced and every controller runs. Both answer ``ok`` when passing,
and list every check (``[+]``/``[-]``) with ``?verbose`` or on failure.

Leader election (``leader_election=LeaderElectionConfig(name=...)``, docs/ha.rst): every replica
starts its informers and syncs its caches (warm standby), then campaigns
for that Lease; only the leader starts its
controllers' workers, and each reconcile is admitted only while it leads by
its own clock. Losing the lease ends the process with status 1 (or, with
``LeaderElectionConfig(exit_on_lost_lease=False)``, stops the manager). A
clean stop drains the workers, then releases the Lease. ``/readyz`` passes on
standbys (they are ready to lead); ``/healthz`` fails when a leader's
elector has not renewed for far longer than the lease.

Sharding (``sharding=ShardingConfig("my-operator")``, docs/ha.rst): every
replica runs every controller, and reconciles only the keys of the shards it
holds; replicas join and leave with membership Leases, shards change hands
through per-shard Leases, never with two replicas on one key.

Configuration problems (no kubeconfig, a malformed one, an unreachable or
refusing server) raise :class:`ConfigurationError`, whose message is one line
saying what is wrong; :meth:`Manager.run` turns it into ``SystemExit`` with
that line, so a misconfigured program ends with a message, not a traceback.

Threading: :meth:`add` before :meth:`start`; :meth:`start` and :meth:`stop`
from any thread (tests embed a manager with them); :meth:`run` installs
signal handlers only when called from the main thread.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import REGISTRY

from pyinformers import _gc_policy as gc_policy
from pyinformers.api._config import ConfigurationError, build_api_client, check_server, one_line
from pyinformers.api._errors import Forbidden, Unauthorized
from pyinformers.api._throttle import TokenBucket, set_client_throttle
from pyinformers.cache._factory import SharedInformerFactory
from pyinformers.cache._transforms import drop_managed_fields
from pyinformers.cache.reflector._options import ReflectorOptions
from pyinformers.controller._controller import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    CacheSyncTimeout,
    Controller,
)
from pyinformers.leaderelection import LeaderElector
from pyinformers.leaderelection._shards import ShardCoordinator
from pyinformers.manager._checks import health_checks as _health_checks
from pyinformers.manager._checks import ready_checks as _ready_checks
from pyinformers.manager._leader import (
    LeaderElectionConfig,
    RunAsLeader,
    election_config,
    resolve_namespace,
)
from pyinformers.manager._metrics_auth import ApiServerAuth
from pyinformers.manager._probes import ANY_PORT, Guard, TLSFiles
from pyinformers.manager._run_mode import Crew, RunAlways, RunMode
from pyinformers.manager._servers import EndpointServers, validate_port
from pyinformers.manager._shard_caches import ShardCaches
from pyinformers.manager._sharding import RunSharded, ShardingConfig
from pyinformers.manager._signals import install_shutdown_handlers
from pyinformers.manager._webhooks import WebhookServer
from pyinformers.resources import LEASES

__all__ = ["ANY_PORT", "ConfigurationError", "Manager"]

log = logging.getLogger("pyinformers.manager._manager")

_POLL = 0.1  # how often long waits look at the stop event (real seconds)


def _no_logging_configured() -> bool:
    """True when no handler would show our INFO lines (the program never configured logging)."""
    logger: logging.Logger | None = log
    while logger is not None:
        if logger.handlers:
            return False
        if not logger.propagate:
            break
        logger = logger.parent
    return True


_JOIN_SLACK = (
    1.0  # past the drain deadline, how long stop() still waits for a controller's drain thread
)
_INFORMERS_STOP = 5.0  # bound on stopping the informers in stop()
_SERVER_STOP = 2.0  # bound on stopping one HTTP server in stop()
_WEBHOOK_STOP = 5.0  # bound on the webhook server's stop: reviews in flight get to finish


class Manager:
    """Runs controllers on one ``ApiClient`` and one :class:`SharedInformerFactory`.

    :param kubeconfig: path of a kubeconfig; None: in-cluster config when in a
        Pod, else ``$KUBECONFIG`` / ``~/.kube/config``.
    :param namespace: watch only this namespace (None: all).
    :param metrics_port: port of ``/metrics``; 0 turns it off;
        :data:`ANY_PORT` (the default) binds a free one (see :attr:`metrics_address`).
    :param health_port: port of ``/healthz`` and ``/readyz``; 0 turns them off.
        When it equals ``metrics_port`` all three share one server.
    :param bind_address: interface the HTTP servers listen on. The default,
        ``"127.0.0.1"`` with free ports (:data:`ANY_PORT`), is safe for a
        Manager embedded in a script or a test: nothing is reachable from the
        network and two local controllers cannot collide. In a Pod the kubelet
        and Prometheus must reach them: :class:`Operator` binds what its flags
        say (``:8443`` and ``:8081``); an embedded Manager passes
        ``bind_address="0.0.0.0"`` and fixed ports.
    :param metrics_host: interface of ``/metrics`` alone (default ``bind_address``).
    :param health_host: interface of the probes alone (default ``bind_address``).
    :param metrics_auth: True: ``/metrics`` answers only callers the API
        server authenticates (TokenReview) and authorizes for ``get`` on the
        ``/metrics`` URL (SubjectAccessReview), see
        :mod:`~pyinformers.manager._metrics_auth`; or a guard of your own.
    :param metrics_tls: serve ``/metrics`` over HTTPS with these
        :class:`~pyinformers.manager._probes.TLSFiles` (reloaded on change).
        Probes stay plain HTTP whatever these say.
    :param api_client: use this ``ApiClient`` instead of building one.
    :param metrics_registry: the Prometheus registry served on ``/metrics`` (the
        default registry when None), as every other component calls it
        (``registry=`` is its deprecated 0.1 name). Controllers report to the
        registry they were given: pass the same one to them.
    :param resync_period: the factory's default resync period (0: none).
    :param cache_transform: the factory's ``transform``, applied to every
        object before it is cached (default
        :func:`~pyinformers.cache.drop_managed_fields`; None: none), e.g.
        ``chain(drop_managed_fields, share_strings)`` to trade decode time
        for memory (:func:`~pyinformers.cache.share_strings`).
    :param reflector_options: a :class:`~pyinformers.cache.ReflectorOptions` (or a
        mapping of its fields) for every informer of the factory, e.g.
        ``{"use_watch_list": False}`` to sync with lists instead of streaming
        lists. An ``on_watch_error`` given here is called after the Manager's own
        (which notices a refused list or watch).
    :param sync_timeout: bound on the wait for caches in :meth:`start`.
    :param shutdown_timeout: bound on the controllers' drain in :meth:`stop`
        (default :data:`~pyinformers.controller._controller.DEFAULT_SHUTDOWN_TIMEOUT`,
        15 s: the whole stop, :attr:`stop_budget`, then fits in the kubelet's
        default 30 s grace period with room for the process to exit).
    :param handler_stall_timeout: an event handler with notifications waiting
        that has finished none for this many seconds (default 120) is
        *stalled*: ``/healthz?verbose`` names it and, with
        ``fail_health_on_stalled_handler`` (default True), ``/healthz`` fails,
        so the kubelet restarts a process whose informer and controller run
        on while that handler's work has stopped (a deadlocked or hung
        handler does not recover by itself; a slow one finishes a
        notification within two minutes). None: never.
        ``pyinformers_informer_handler_stalled_seconds`` shows it either way.
    :param check_server: ask ``/version`` at start and fail fast if unreachable.
    :param tune_gc: apply :mod:`pyinformers._gc_policy` while running (rare full
        collections, synced caches frozen); undone by :meth:`stop`.
    :param leader_election: a :class:`LeaderElectionConfig`: run the
        controllers only while this replica holds its Lease (informers run on
        every replica). The 0.1 keywords (``leader_election=True``,
        ``leader_election_id``, ``leader_election_namespace``,
        ``leader_election_config``) still work, with a deprecation warning.
    :param sharding: a :class:`~pyinformers.manager._sharding.ShardingConfig`:
        share the controllers' keys with the other replicas (exclusive with
        leader election).
    :param kube_api_qps: a client-side throttle on every request through the
        Manager's ``ApiClient`` (a :class:`~pyinformers.api.TokenBucket` of this
        many requests a second, ``kube_api_burst`` at once). None or 0: off,
        the default, as controller-runtime's: the server's Priority and
        Fairness is the better guard (see :mod:`pyinformers.api._throttle`).
    :param kube_api_burst: the throttle's burst (default: 1.5 x the QPS, at least 1).
    :param webhooks: a :class:`~pyinformers.webhook.Webhooks` (or several)
        to serve with a :class:`~pyinformers.manager.WebhookServer` on every
        replica, leader or not (docs/webhooks.rst).
    :param webhook_port: its port (default a free one, as for the other servers;
        the operator's ``--webhook-bind-address`` says ``:9443``; 0 turns it off).
    :param webhook_host: its interface (default ``bind_address``).
    :param webhook_tls: its certificate and key files (required with webhooks).

    Raises :class:`ConfigurationError` when no usable configuration is found.
    """

    def __init__(
        self,
        kubeconfig: str | os.PathLike | None = None,
        *,
        namespace: str | None = None,
        metrics_port: int = ANY_PORT,
        health_port: int = ANY_PORT,
        bind_address: str = "127.0.0.1",
        api_client: Any = None,
        metrics_registry: Any = None,
        registry: Any = None,
        resync_period: float = 0,
        cache_transform: Callable[[Any], Any] | None = drop_managed_fields,
        reflector_options: ReflectorOptions | Mapping[str, Any] | None = None,
        sync_timeout: float = 120.0,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        check_server: bool = True,
        tune_gc: bool = True,
        metrics_host: str | None = None,
        health_host: str | None = None,
        metrics_auth: bool | Guard = False,
        metrics_tls: TLSFiles | None = None,
        leader_election: LeaderElectionConfig | bool | None = None,
        leader_election_id: str | None = None,
        leader_election_namespace: str | None = None,
        leader_election_config: LeaderElectionConfig | None = None,
        sharding: ShardingConfig | None = None,
        kube_api_qps: float | None = None,
        kube_api_burst: int | None = None,
        webhooks: Any = None,
        webhook_port: int = ANY_PORT,
        webhook_host: str | None = None,
        webhook_tls: TLSFiles | None = None,
        handler_stall_timeout: float | None = 120.0,
        fail_health_on_stalled_handler: bool = True,
    ) -> None:
        validate_port("metrics_port", metrics_port)
        if handler_stall_timeout is not None and not handler_stall_timeout > 0:
            raise ValueError(
                f"handler_stall_timeout must be > 0 seconds or None, got {handler_stall_timeout!r}"
            )
        #: A handler with notifications waiting that finished none for this long is stalled (None: never).
        self.handler_stall_timeout = handler_stall_timeout
        #: Whether a stalled handler fails ``/healthz`` (it shows in ``?verbose`` and on /metrics either way).
        self.fail_health_on_stalled_handler = bool(fail_health_on_stalled_handler)
        validate_port("webhook_port", webhook_port)
        #: The webhook server (None without webhooks or with webhook_port 0); started by start().
        self.webhook_server: WebhookServer | None = None
        if webhooks is not None and webhook_port:
            if webhook_tls is None:
                raise ValueError(
                    "webhooks need webhook_tls (a certificate and key): the API server calls them over HTTPS"
                )
            self.webhook_server = WebhookServer(
                webhooks,
                bind_address if webhook_host is None else webhook_host,
                webhook_port,
                tls=webhook_tls,
            )
        election = election_config(
            leader_election,
            lease_name=leader_election_id,
            namespace=leader_election_namespace,
            config=leader_election_config,
        )
        if registry is not None:
            if metrics_registry is not None:
                raise ValueError("give metrics_registry alone (registry is its deprecated name)")
            warnings.warn(
                "Manager(registry=...) is deprecated: pass metrics_registry=...",
                DeprecationWarning,
                stacklevel=2,
            )
            metrics_registry = registry
        registry = metrics_registry
        if election is not None and sharding is not None:
            raise ValueError(
                "choose leader_election or sharding: a sharded replica already owns its keys alone"
            )
        validate_port("health_port", health_port)
        if api_client is not None and kubeconfig is not None:
            raise ValueError("give either kubeconfig or api_client, not both")
        self.api_client = build_api_client(kubeconfig) if api_client is None else api_client
        if kube_api_qps:
            burst = kube_api_burst if kube_api_burst else max(1, int(kube_api_qps * 1.5))
            set_client_throttle(self.api_client, TokenBucket(kube_api_qps, burst))
        self.registry = REGISTRY if registry is None else registry
        self.namespace = namespace
        # The first 401/403 an informer met (a list or watch the RBAC refuses): retrying cannot fix it.
        self._denied: BaseException | None = None
        options = ReflectorOptions.of(reflector_options)
        self._user_watch_error = options.on_watch_error
        self.factory = SharedInformerFactory(
            self.api_client,
            namespace=namespace,
            resync_period=resync_period,
            transform=cache_transform,
            metrics_registry=registry,
            reflector_options=options.replace(on_watch_error=self._note_watch_error),
        )
        self.metrics_port = metrics_port
        self.health_port = health_port
        self.bind_address = bind_address
        self.sync_timeout = float(sync_timeout)
        self.shutdown_timeout = float(shutdown_timeout)
        self._check_server = check_server
        self._tune_gc = tune_gc
        # The GC thresholds before start() tuned them; None while the GC is untouched.
        self._gc_threshold_before: tuple[int, int, int] | None = None
        self._lock = threading.Lock()
        self._controllers: list[Controller] = []
        self._started = False
        self._synced = False
        self._stop_requested = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()  # one stop() does the work; others wait for it
        guard: Guard | None = None
        if metrics_auth is True:
            guard = ApiServerAuth.for_api_client(self.api_client)
        elif callable(metrics_auth):
            guard = metrics_auth
        self.leader_election = election is not None
        self.leader_election_config = election or LeaderElectionConfig()
        self.leader_election_id = election.name if election else None
        self.leader_election_namespace = (
            resolve_namespace(
                election.namespace,
                what="leader election",
                how="LeaderElectionConfig(namespace=...)",
            )
            if election
            else None
        )
        #: True once this replica lost the leader lease it held, or its shard membership (when not exiting).
        self.lost_lease = False
        self.sharding = sharding
        self.sharding_namespace = (
            resolve_namespace(
                sharding.namespace, what="sharding", how="ShardingConfig(namespace=...)"
            )
            if sharding
            else None
        )
        #: The shard-aware caches (``ShardingConfig(shard_caches=True)``), else None.
        self.shard_caches: ShardCaches | None = None
        if sharding is not None and sharding.shard_caches:
            self.factory._shardable = True  # informers asked for from now on may follow the shards
            # A shard's caches are listed once it has stayed held for two coordinator steps.
            self.shard_caches = ShardCaches(
                self.factory, sharding.shards, settle=2 * sharding.timing.retry_period
            )
        #: When the workers run and what they may reconcile (:mod:`pyinformers.manager._run_mode`).
        self.run_mode: RunMode = self._choose_run_mode()
        self._endpoints = EndpointServers(
            bind_address,
            metrics_port,
            health_port,
            registry=self.registry,
            health_checks=self.health_checks,
            ready_checks=self.ready_checks,
            stop_requested=self._stop_requested,
            metrics_host=metrics_host,
            health_host=health_host,
            metrics_guard=guard,
            metrics_tls=metrics_tls,
        )

    def _choose_run_mode(self) -> RunMode:
        if self.leader_election:
            return RunAsLeader(
                self.api_client,
                self.leader_election_config,
                self.leader_election_namespace or "",
            )
        sharding = self.sharding
        if sharding is not None:
            # Membership Leases are watched like any cache, so they sync before the replica joins.
            leases = self.factory.informer(LEASES, namespace=self.sharding_namespace)
            return RunSharded(
                self.api_client,
                sharding,
                self.sharding_namespace or "",
                leases.indexer.list,
                self.shard_caches,
            )
        return RunAlways()

    def _crew(self, controllers: list[Controller]) -> Crew:
        def lost() -> None:
            self.lost_lease = True

        return Crew(
            controllers=controllers,
            start=self._start_controllers,
            drain=self._drain,
            stopping=self._stop_requested,
            shutdown_timeout=self.shutdown_timeout,
            registry=self.registry,
            on_lost=lost,
        )

    @property
    def elector(self) -> LeaderElector | None:
        """The elector while leader election runs (created by start()), else None."""
        mode = self.run_mode
        return mode.elector if isinstance(mode, RunAsLeader) else None

    @property
    def leading_since(self) -> float | None:
        """Monotonic time at which this replica last became the leader (None: never)."""
        mode = self.run_mode
        return mode.leading_since if isinstance(mode, RunAsLeader) else None

    @property
    def shards(self) -> ShardCoordinator | None:
        """The shard coordinator while sharding runs (created by start()), else None."""
        mode = self.run_mode
        return mode.coordinator if isinstance(mode, RunSharded) else None

    # -- wiring -------------------------------------------------------------------------
    def add(self, controller: Controller) -> Controller:
        """Run ``controller`` with this manager; returns it. Call before :meth:`start`."""
        if not isinstance(controller, Controller):
            raise TypeError(f"add() takes a Controller, got {controller!r}")
        controller.check_watches()
        with self._lock:
            if self._started:
                raise RuntimeError("add controllers before the manager starts")
            if any(c.name == controller.name for c in self._controllers):
                raise ValueError(
                    f"a controller named {controller.name!r} was already added (names label metrics)"
                )
            self._controllers.append(controller)
        if (
            controller.metrics_registry is not None
            and controller.metrics_registry is not self.registry
        ):
            log.warning(
                "controller %r reports metrics to another registry than the manager serves on /metrics; "
                "pass metrics_registry=manager.registry to it",
                controller.name,
            )
        return controller

    @property
    def controllers(self) -> list[Controller]:
        with self._lock:
            return list(self._controllers)

    # -- probes ---------------------------------------------------------------------------
    def health_checks(self) -> list[tuple[str, bool, str]]:
        """``(name, ok, detail)`` for ``/healthz``: informers' reflectors, controllers' workers, RBAC refusals,
        and (with leader election) a leader that stopped renewing."""
        checks = _health_checks(
            self.factory.informers(),
            self.controllers,
            started=self._started,
            stall_timeout=self.handler_stall_timeout,
            fail_on_stall=self.fail_health_on_stalled_handler,
        )
        if self._denied is not None:
            checks.append(("permissions", False, one_line(self._denied)))
        checks.extend(self.run_mode.health_checks())
        return checks

    def ready_checks(self) -> list[tuple[str, bool, str]]:
        """``(name, ok, detail)`` for ``/readyz``: caches synced, controllers running."""
        mode = self.run_mode
        # A standby's controllers wait for the lease: that is ready (to lead), not failing.
        controllers = [] if mode.standby() else self.controllers
        checks = _ready_checks(
            self.factory.informers(), controllers, stopping=self._stop_requested.is_set()
        )
        server = self.webhook_server
        if server is not None:
            detail = "" if server.serving else "the webhook server is not serving"
            checks.append(("webhook", server.serving, detail))
        checks.extend(mode.ready_checks())
        return checks

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """Where ``/metrics`` is served (host, port), or None when off or not started."""
        server = self._endpoints.metrics_server
        return server.address if server else None

    @property
    def health_address(self) -> tuple[str, int] | None:
        """Where ``/healthz`` and ``/readyz`` are served, or None when off or not started."""
        server = self._endpoints.health_server
        return server.address if server else None

    @property
    def webhook_address(self) -> tuple[str, int] | None:
        """Where the webhook server serves (host, port), or None when off or not started."""
        server = self.webhook_server
        return server.address if server is not None else None

    @property
    def stop_budget(self) -> float:
        """The longest :meth:`stop` can take (seconds): drain, informers, each HTTP server.

        Keep the Pod's ``terminationGracePeriodSeconds`` above it (plus the
        event recorder's flush): with the defaults it is 15 + 1 + 5 + 2 x 2 = 25 s,
        inside the kubelet's default 30 s.
        """
        ports = [p for p in (self.metrics_port, self.health_port) if p]
        endpoints = self._endpoints
        shared = (
            len(ports) == 2
            and ports[0] == ports[1] != ANY_PORT
            and endpoints.metrics_host == endpoints.health_host
        )
        servers = 1 if shared else len(ports)
        # With leader election the elector's stop (drain, then release the Lease) and the drain's own
        # join each get a slack second past the drain deadline.
        slack = _JOIN_SLACK * (2 if self.leader_election else 1)
        webhook = _WEBHOOK_STOP if self.webhook_server is not None else 0.0
        return self.shutdown_timeout + slack + _INFORMERS_STOP + _SERVER_STOP * servers + webhook

    # -- running --------------------------------------------------------------------------
    def start(self) -> None:
        """Serve the endpoints, check the server, start informers, wait for caches, start controllers.

        Returns once every controller runs. Raises :class:`ConfigurationError`
        (bad endpoint ports, unreachable server) or
        :class:`~pyinformers.controller._controller.CacheSyncTimeout`; after
        either, everything already started is stopped again. Returns early,
        without error, when :meth:`stop` (or a signal) interrupts it.
        """
        with self._lock:
            if self._started:
                raise RuntimeError("the manager was already started; a manager runs once")
            self._started = True
            controllers = list(self._controllers)
        try:
            self._endpoints.start()
            self._start_webhooks()
            if self._check_server:
                check_server(self.api_client)
            if self.shard_caches is not None:
                sharded = self.shard_caches.plan(controllers)
                log.info("caches following the held shards: %s", ", ".join(sharded) or "none")
            if self._tune_gc:
                self._gc_threshold_before = gc_policy.tune_for_caches()
            self.factory.start()
            self._wait_for_caches()
            if self._stop_requested.is_set():
                return
            self._synced = True
            if self._tune_gc:
                frozen = gc_policy.freeze_synced_caches()
                log.debug(
                    "froze %d objects (the synced caches) out of the cyclic GC's reach", frozen
                )
            self.run_mode.start(self._crew(controllers))
        except BaseException:
            self.stop(timeout=5.0)
            raise

    def _start_webhooks(self) -> None:
        server = self.webhook_server
        if server is None or self._stop_requested.is_set():
            return
        try:
            server.start()
        except (OSError, ValueError) as err:
            raise ConfigurationError(
                f"cannot serve the webhooks on {server.host}:{server.port}: {one_line(err)}"
            ) from None

    def _start_controllers(self, controllers: list[Controller]) -> None:
        for controller in controllers:
            if self._stop_requested.is_set():
                return
            try:
                controller.start()
            except RuntimeError:
                if self._stop_requested.is_set():  # stop() got to it first
                    return
                raise
        log.info(
            "running %d controller(s) on %d informer(s)",
            len(controllers),
            len(self.factory.informers()),
        )

    def _note_watch_error(self, error: BaseException) -> None:
        """Reflector callback (its thread): remember the first list/watch the API server refused."""
        if self._denied is None and isinstance(error, (Forbidden, Unauthorized)):
            self._denied = error
        if self._user_watch_error is not None:
            self._user_watch_error(error)

    def _refusal(self) -> ConfigurationError | None:
        denied = self._denied
        if denied is None:
            return None
        return ConfigurationError(
            f"the API server refuses what the controllers need to read: {one_line(denied)} "
            "(grant it in the operator's RBAC; python -m pyinformers rbac <module> prints what is needed)"
        )

    def _wait_for_caches(self) -> None:
        deadline = time.monotonic() + self.sync_timeout
        informers = list(self.factory.informers().values())
        for informer in informers:
            while not self._stop_requested.is_set() and not informer.has_synced():
                refusal = self._refusal()
                if refusal is not None:
                    raise refusal
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                informer.wait_for_cache_sync(min(remaining, _POLL))
        if self._stop_requested.is_set():
            return
        # A refusal reported while the caches synced (a missing list permission, which a
        # streaming list does not need, is found by asking before it) fails the start too.
        refusal = self._refusal()
        if refusal is not None:
            raise refusal
        # Each pending informer says why when it knows: "informer v1/things (cache not synced;
        # last error: list: NotFound: ... is the CustomResourceDefinition installed?)".
        pending = [
            f"informer {i.name} ({i.sync_problem()})" for i in informers if not i.has_synced()
        ]
        if pending:
            raise CacheSyncTimeout("manager", self.sync_timeout, pending)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop controllers (draining), then informers, then the HTTP servers.

        ``timeout`` (default ``shutdown_timeout``) bounds the controllers'
        drain; informers and servers get a few seconds more. Returns True when
        everything stopped cleanly. Idempotent; callable from any thread.
        ``api_client`` stays usable (an event recorder may still flush
        through it after the controllers stopped).
        """
        timeout = self.shutdown_timeout if timeout is None else timeout
        self._stop_requested.set()
        with self._stop_lock:
            if self._stopped.is_set():
                return True
            return self._stop(timeout)

    def _stop(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout)
        clean = True
        controllers = self.controllers
        # First the run mode: a leader drains its workers, then releases the Lease; a shard
        # member stops admitting, lets in-flight reconciles end and hands its shards back.
        clean = self.run_mode.stop(deadline) and clean
        clean = self._drain(controllers, deadline) and clean
        try:
            clean = self.factory.stop(timeout=_INFORMERS_STOP) and clean
        except Exception:  # keep going: the servers and the client must still be closed
            log.exception("stopping the informers failed")
            clean = False
        clean = self._endpoints.stop(timeout=_SERVER_STOP) and clean
        if self.webhook_server is not None:  # last: the API server calls it until the very end
            clean = self.webhook_server.stop(timeout=_WEBHOOK_STOP) and clean
        if self._gc_threshold_before is not None:
            gc_policy.restore(self._gc_threshold_before)
            self._gc_threshold_before = None
        self._stopped.set()
        log.info("stopped%s", "" if clean else " (some threads did not finish in time)")
        return clean

    @staticmethod
    def _drain(controllers: list[Controller], deadline: float) -> bool:
        """Stop every controller, draining in parallel until ``deadline``; True when all workers exited."""
        # Signal every controller first so they drain in parallel, then wait for each.
        drains = [
            threading.Thread(
                target=c.stop,
                args=(max(0.0, deadline - time.monotonic()),),
                name=f"pyinformers-manager-stop-{c.name}",
                daemon=True,
            )
            for c in controllers
        ]
        for t in drains:
            t.start()
        for t in drains:
            t.join(max(0.0, deadline - time.monotonic()) + _JOIN_SLACK)
        return not any(c.workers_alive() for c in controllers)

    def run(self) -> None:
        """Start, block until SIGTERM/SIGINT (or :meth:`stop`), then shut down gracefully.

        In the main thread, SIGTERM and SIGINT request a graceful shutdown and
        a second one exits the process at once with status 1; the previous
        handlers are restored on return. A :class:`ConfigurationError` ends
        the program with its one-line message (``SystemExit``), and so does
        a list or watch the API server refuses later (401/403: a permission
        missing from the RBAC, such as ``watch``, which is first used after
        the caches synced): the operator stops and exits instead of retrying
        what cannot succeed.
        """
        restore = install_shutdown_handlers(self._stop_requested.set)
        announce = _no_logging_configured()
        started = False
        try:
            try:
                self.start()
            except ConfigurationError as err:
                raise SystemExit(f"pyinformers: {err}") from None
            except CacheSyncTimeout as err:
                raise SystemExit(f"pyinformers: {err}") from None
            started = True
            if announce:
                print(
                    f"pyinformers: {self._running_line()} (no logging configured: this line and one at stop)",
                    file=sys.stderr,
                    flush=True,
                )
            while not self._stop_requested.wait(_POLL):
                refusal = self._refusal()
                if refusal is not None:
                    log.error("%s; stopping", refusal)
                    raise SystemExit(f"pyinformers: {refusal}")
        finally:
            try:
                clean = self.stop()
                if announce and started:
                    print(
                        "pyinformers: stopped"
                        + ("" if clean else " (some threads did not finish in time)"),
                        file=sys.stderr,
                        flush=True,
                    )
            finally:
                restore()

    def _running_line(self) -> str:
        parts = [
            f"running {len(self.controllers)} controller(s) on {len(self.factory.informers())} informer(s)"
        ]
        if self.metrics_address:
            parts.append("metrics on http://{}:{}/metrics".format(*self.metrics_address[:2]))
        if self.health_address:
            parts.append("probes on http://{}:{}/healthz".format(*self.health_address[:2]))
        if self.webhook_address:
            parts.append("webhooks on https://{}:{}".format(*self.webhook_address[:2]))
        return ", ".join(parts)

    def __repr__(self) -> str:
        state = "stopped" if self._stopped.is_set() else ("running" if self._started else "new")
        return (
            f"<Manager {state} controllers={[c.name for c in self.controllers]} "
            f"informers={len(self.factory.informers())} host={getattr(self.api_client.configuration, 'host', '?')}>"
        )
