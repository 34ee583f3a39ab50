"""Leader election for the :class:`~pyinformers.manager._manager.Manager`: settings and the worker gate.

With ``Manager(leader_election=LeaderElectionConfig(name="my-operator"))``
every replica starts its informers and waits for their caches (a *warm
standby*), then campaigns for the Lease ``my-operator``; only the leader
starts its controllers' workers. What this module holds:

* :class:`LeaderElectionConfig` -- every setting in one value: the Lease's
  name and namespace, timing, identity, release on shutdown, what losing
  does (:func:`election_config` also accepts the keywords of 0.1, with a
  deprecation warning);
* :func:`resolve_namespace` -- the Lease namespace: the one given, else the
  Pod's own (the service account's namespace file), else a clear error;
* :class:`LeaderAdmission` -- the :class:`~pyinformers.controller._controller.Admission`
  that lets a worker start a reconcile only while the elector says we lead
  *now* (its clock, not its last callback), so no reconcile starts after
  leadership ended even if the elector's thread is late to notice;
* :class:`RunAsLeader` -- the Manager's run mode
  (:mod:`pyinformers.manager._run_mode`): campaign once the caches synced,
  start the workers on winning, drain them on a stop before the Lease is
  released, and end the process (or the Manager) when the lease is lost.

Threading: the settings are frozen values; the admission is called from
worker threads and only reads the elector's thread-safe state; the run
mode's callbacks come from the elector's thread and never block it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from pyinformers._metrics import collector_for
from pyinformers.api._config import ConfigurationError
from pyinformers.leaderelection import ElectionTiming, LeaderElector, LeaseLock
from pyinformers.manager._run_mode import Check, Crew

__all__ = [
    "SERVICEACCOUNT_NAMESPACE",
    "LeaderAdmission",
    "LeaderElectionConfig",
    "LeaderElectionMetrics",
    "RunAsLeader",
    "default_identity",
    "election_config",
    "resolve_namespace",
]

log = logging.getLogger("pyinformers.manager._manager")

#: Where a Pod finds its own namespace.
SERVICEACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def default_identity() -> str:
    """``<hostname>_<uuid4>``: the Pod name (the hostname in a Pod) made unique per process, as client-go does."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def resolve_namespace(
    namespace: str | None, *, what: str, path: str = SERVICEACCOUNT_NAMESPACE, how: str = ""
) -> str:
    """``namespace``, else the Pod's namespace read from ``path``; :class:`ConfigurationError` when neither."""
    if namespace:
        return namespace
    try:
        with open(path, encoding="utf-8") as f:
            found = f.read().strip()
    except OSError:
        found = ""
    if not found:
        raise ConfigurationError(
            f"{what} needs a namespace for its Lease: not running in a Pod ({path} is missing); "
            f"pass {how or what.replace(' ', '_') + '_namespace'}"
        )
    return found


@dataclass(frozen=True)
class LeaderElectionConfig:
    """How a Manager campaigns: ``Manager(leader_election=LeaderElectionConfig(name=...))``.

    :param name: the Lease's name (required; unique per operator: its
        replicas share it).
    :param namespace: the Lease's namespace (default: the Pod's own; outside
        a Pod it must be given).
    :param timing: lease duration / renew deadline / retry period
        (15 / 10 / 2 s, client-go's; see docs/ha.rst for the trade-offs).
    :param identity: this replica's holder identity (default
        :func:`default_identity`: hostname and a fresh uuid).
    :param release_on_cancel: on a clean shutdown, after the workers drained,
        empty the Lease's holder so a standby takes over within one retry
        period instead of waiting out the lease.
    :param exit_on_lost_lease: when leadership is lost (not given up), end
        the process at once with status 1, as controller-runtime does, so no
        worker of a former leader keeps writing and the Deployment restarts it
        clean. False: stop the Manager instead (workers drained, ``run()``
        returns, :attr:`Manager.lost_lease` is True); for embedding and tests.
    """

    timing: ElectionTiming = field(default_factory=ElectionTiming)
    identity: str | None = None
    release_on_cancel: bool = True
    exit_on_lost_lease: bool = True
    name: str | None = None
    namespace: str | None = None


def election_config(
    leader_election: LeaderElectionConfig | bool | None,
    *,
    lease_name: str | None = None,
    namespace: str | None = None,
    config: LeaderElectionConfig | None = None,
) -> LeaderElectionConfig | None:
    """The one config form from what a Manager was given (None: no leader election).

    ``leader_election`` is a :class:`LeaderElectionConfig` (the form since
    0.2), or the 0.1 form: ``True`` with ``leader_election_id`` /
    ``leader_election_namespace`` / ``leader_election_config``, accepted with a
    :class:`DeprecationWarning`. Mixing the two forms is a :class:`ValueError`.
    """
    old_form = lease_name is not None or namespace is not None or config is not None
    if isinstance(leader_election, LeaderElectionConfig):
        if old_form:
            raise ValueError(
                "give leader_election=LeaderElectionConfig(name=..., namespace=...) alone, "
                "without leader_election_id / leader_election_namespace / leader_election_config"
            )
        chosen = leader_election
    elif leader_election is True or old_form:
        warnings.warn(
            "Manager(leader_election=True, leader_election_id=..., leader_election_namespace=..., "
            "leader_election_config=...) is deprecated: pass "
            "leader_election=LeaderElectionConfig(name=..., namespace=..., ...)",
            DeprecationWarning,
            stacklevel=3,
        )
        if not leader_election:
            return None
        base = config or LeaderElectionConfig()
        chosen = replace(base, name=lease_name or base.name, namespace=namespace or base.namespace)
    elif leader_election in (False, None):
        return None
    else:
        raise TypeError(f"leader_election takes a LeaderElectionConfig, got {leader_election!r}")
    if not chosen.name:
        raise ValueError(
            "leader election needs the Lease's name: LeaderElectionConfig(name=...), "
            "shared by the operator's replicas"
        )
    return chosen


class LeaderAdmission:
    """Admit a reconcile only while ``elector`` leads now."""

    __slots__ = ("elector",)

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector

    def enter(self, key: Any) -> bool:
        return self.elector.is_leader()

    def exit(self, key: Any) -> None:
        pass


class LeaderElectionMetrics:
    """``leader_election_master_status{name}``: 1 while this replica leads the Lease ``name``, else 0.

    client-go's metric name, so existing dashboards and alerts apply. One
    collector per registry (:func:`pyinformers._metrics.collector_for`); each
    Manager adds its elector, read at scrape time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._electors: dict[str, LeaderElector] = {}

    def track(self, name: str, elector: LeaderElector) -> None:
        with self._lock:
            self._electors[name] = elector

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(
            "leader_election_master_status",
            "1 while this replica holds the leader election Lease, 0 otherwise",
            labels=["name"],
        )
        with self._lock:
            electors = dict(self._electors)
        for name, elector in sorted(electors.items()):
            family.add_metric([name], 1.0 if elector.is_leader() else 0.0)
        yield family


class RunAsLeader:
    """Run the workers only while this replica holds the Lease ``name`` in ``namespace``.

    :meth:`start` (caches synced) gates every controller on a
    :class:`LeaderAdmission` and starts the elector; winning starts the
    workers on a thread of ours (the elector's callbacks must return at
    once); :meth:`stop` stops the elector, whose callback drains the workers
    before it releases the Lease.
    """

    def __init__(self, api_client: Any, config: LeaderElectionConfig, namespace: str) -> None:
        if not config.name:
            raise ValueError("leader election needs the Lease's name")
        self.api_client = api_client
        self.config = config
        self.name: str = config.name
        self.namespace = namespace
        #: The elector, once started.
        self.elector: LeaderElector | None = None
        #: Monotonic time at which this replica last became the leader (None: never).
        self.leading_since: float | None = None
        self._crew: Crew | None = None

    def start(self, crew: Crew) -> None:
        config = self.config
        self._crew = crew
        lock = LeaseLock(
            self.api_client, self.name, self.namespace, config.identity or default_identity()
        )
        elector = LeaderElector(
            lock,
            timing=config.timing,
            release_on_cancel=config.release_on_cancel,
            on_started_leading=self._started_leading,
            on_stopped_leading=self._stopped_leading,
            name=f"manager-{self.name}",
        )
        admission = LeaderAdmission(elector)
        for controller in crew.controllers:
            controller.set_admission(admission)
        if crew.stopping.is_set():
            return
        self.elector = elector
        if crew.registry is not None:
            collector_for(crew.registry, LeaderElectionMetrics).track(self.name, elector)
        log.info(
            "caches synced; campaigning for the Lease %s as %s", lock.describe(), lock.identity
        )
        elector.start()

    def _started_leading(self) -> None:
        """Elector callback (its thread, must return at once): start the workers on a thread of ours."""
        self.leading_since = time.monotonic()
        crew = self._crew
        assert crew is not None

        def start() -> None:
            try:
                crew.start(crew.controllers)
            except Exception:
                log.exception("starting the controllers after winning the lease failed; stopping")
                crew.stopping.set()

        threading.Thread(target=start, name="pyinformers-manager-leading", daemon=True).start()

    def _stopped_leading(self) -> None:
        """Elector callback: drain the workers (before a release), or handle a lost lease."""
        crew = self._crew
        assert crew is not None
        deadline = time.monotonic() + crew.shutdown_timeout
        if not crew.stopping.is_set():  # not our own stop: the lease was lost
            crew.lost(
                f"the leader election lease {self.config.name}",
                exit_process=self.config.exit_on_lost_lease,
            )
        crew.drain(crew.controllers, deadline)

    def stop(self, deadline: float) -> bool:
        elector = self.elector
        if elector is None:
            return True
        # The elector's callback drains the workers, then it releases the Lease: a slack second more.
        return elector.stop(timeout=max(0.0, deadline - time.monotonic()) + 1.0)

    def health_checks(self) -> list[Check]:
        elector = self.elector
        if elector is None:
            return []
        ok = elector.check(self.config.timing.lease_duration)
        return [("leader election", ok, "" if ok else "leading but not renewing the lease")]

    def standby(self) -> bool:
        elector = self.elector
        return elector is None or not elector.is_leader()

    def ready_checks(self) -> list[Check]:
        if not self.standby():
            return []
        leader = self.elector.leader if self.elector is not None else ""
        return [("leader election", True, f"standby (leader: {leader or 'none yet'})")]

    def __repr__(self) -> str:
        return f"<RunAsLeader {self.namespace}/{self.config.name}>"
