"""Manager leader election over the embedded API server: warm standby, only the leader writes, failover.

Managers run in real time here (their elector, informers and workers are
threads), with short lease settings; every wait is on a condition with a
deadline.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.api._client import ResourceClient
from pyinformers.api._config import ConfigurationError
from pyinformers.controller import Controller
from pyinformers.leaderelection import ElectionTiming
from pyinformers.manager import ANY_PORT, Manager
from pyinformers.manager._leader import LeaderElectionConfig, resolve_namespace
from pyinformers.resources import CONFIGMAPS, LEASES
from pyinformers.testing import eventually

REPO = Path(__file__).resolve().parents[2]
FAST = ElectionTiming(lease_duration=2.0, renew_deadline=1.5, retry_period=0.25)
KEYS = 20
WAIT = 20.0


class Stamp(Controller):
    """Writes ``reconciled-by: <identity>`` on each ConfigMap it reconciles (once per identity)."""

    def __init__(self, manager, identity):
        super().__init__("stamp", metrics_registry=manager.registry, workers=2)
        self.identity = identity
        self.lister = manager.factory.lister(CONFIGMAPS)
        self.client = manager.factory.client(CONFIGMAPS)
        self.writes = []  # (monotonic time, key)
        self.first_reconcile = None
        self.watch(manager.factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        if self.first_reconcile is None:
            self.first_reconcile = time.monotonic()
        namespace, name = key.split("/")
        cm = self.lister.get(name, namespace=namespace)
        if (
            cm is None
            or (cm["metadata"].get("annotations") or {}).get("reconciled-by") == self.identity
        ):
            return None
        self.client.patch(
            name, {"metadata": {"annotations": {"reconciled-by": self.identity}}}, namespace
        )
        self.writes.append((time.monotonic(), key))
        return None


def make(cluster, identity, namespace="default", **config):
    manager = Manager(
        api_client=cluster.api_client(),
        bind_address="127.0.0.1",
        metrics_registry=CollectorRegistry(),
        metrics_port=0,
        health_port=ANY_PORT,
        namespace=namespace,
        leader_election=LeaderElectionConfig(
            name="stamp-operator",
            namespace=namespace,
            timing=FAST,
            identity=identity,
            exit_on_lost_lease=False,
            **config,
        ),
    )
    return manager, manager.add(Stamp(manager, identity))


def stamped_by(client, namespace="default"):
    return {
        cm["metadata"]["name"]: (cm["metadata"].get("annotations") or {}).get("reconciled-by")
        for cm in client.list_all(namespace).items
        if cm["metadata"]["name"].startswith(("cm-", "late"))
    }


def readyz(manager):
    import urllib.error
    import urllib.request

    host, port = manager.health_address
    try:
        with urllib.request.urlopen(
            f"http://{host}:{port}/readyz?verbose", timeout=WAIT
        ) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _configmaps(cluster, namespace):
    client = ResourceClient(cluster.api_client(), CONFIGMAPS)
    for i in range(KEYS):
        client.create({"metadata": {"name": f"cm-{i:02d}", "namespace": namespace}})
    return client


@pytest.fixture
def configmaps(api_server):
    return _configmaps(api_server, "default")


@pytest.mark.parametrize("release", [True, False])
def test_a_manager_pair_only_the_leader_writes_and_the_standby_takes_over_warm(k8s, release):
    """On the embedded server, and on a real kube-apiserver with ``--k8s-server=real``."""
    ns = k8s.namespace
    configmaps = _configmaps(k8s, ns)
    a, stamp_a = make(k8s, "replica-a", ns, release_on_cancel=release)
    b, stamp_b = make(k8s, "replica-b", ns, release_on_cancel=release)
    try:
        a.start()
        eventually(
            lambda: a.elector is not None and a.elector.is_leader(), timeout=WAIT, what="a to lead"
        )
        b.start()  # caches sync on b too: a warm standby
        assert all(i.has_synced() for i in b.factory.informers().values())
        eventually(
            lambda: set(stamped_by(configmaps, ns).values()) == {"replica-a"},
            timeout=WAIT,
            what="a to stamp every ConfigMap",
        )
        eventually(
            lambda: b.elector is not None and b.elector.leader == "replica-a",
            timeout=WAIT,
            what="b to see a lead",
        )
        status, body = readyz(b)
        assert status == 200 and "[+]leader election ok" in body  # a standby is ready (to lead)
        from prometheus_client import generate_latest

        assert b'leader_election_master_status{name="stamp-operator"} 1.0' in generate_latest(
            a.registry
        )
        assert b'leader_election_master_status{name="stamp-operator"} 0.0' in generate_latest(
            b.registry
        )
        assert not b.elector.is_leader() and not stamp_b.is_running() and stamp_b.writes == []
        configmaps.create({"metadata": {"name": "late", "namespace": ns}})
        eventually(
            lambda: stamped_by(configmaps, ns).get("late") == "replica-a",
            timeout=WAIT,
            what="a to stamp a new ConfigMap",
        )
        assert stamp_b.writes == []  # the standby saw the event and did nothing

        # Kill the leader (clean stop: with release the Lease is handed over, without it b waits it out).
        stopped_at = time.monotonic()
        assert a.stop(timeout=10)
        a_last_write = max((t for t, _ in stamp_a.writes), default=0)
        eventually(lambda: b.elector.is_leader(), timeout=WAIT, what="b to take over")
        took_over = time.monotonic()
        failover = took_over - stopped_at
        if release:
            assert failover < FAST.retry_period * (1 + FAST.jitter) + 1.0
        else:
            assert failover > FAST.renew_deadline
        for i in range(KEYS):  # a change made after the failover is reconciled by b
            configmaps.patch(f"cm-{i:02d}", {"metadata": {"labels": {"round": "2"}}}, ns)
        eventually(
            lambda: set(stamped_by(configmaps, ns).values()) == {"replica-b"},
            timeout=WAIT,
            what="b to converge",
        )
        assert (
            stamp_b.first_reconcile - b.leading_since < 5.0
        )  # warm: no list before the first reconcile
        assert min(t for t, _ in stamp_b.writes) > a_last_write  # never both writing
        assert not b.lost_lease and not a.lost_lease
    finally:
        a.stop(timeout=5)
        b.stop(timeout=5)


def test_a_leader_that_loses_its_lease_stops_its_workers(api_server, configmaps):
    a, stamp_a = make(api_server, "replica-a")
    try:
        a.start()
        eventually(lambda: stamp_a.is_running(), timeout=WAIT, what="a to lead and run")
        leases = ResourceClient(api_server.api_client(), LEASES)
        lease = leases.get("stamp-operator", "default")
        lease["spec"]["holderIdentity"] = (
            "usurper"  # someone took the lease (an operator's manual edit)
        )
        leases.replace(lease)
        eventually(lambda: a.lost_lease, timeout=WAIT, what="a to notice")
        eventually(
            lambda: not stamp_a.is_running() and stamp_a.workers_alive() == 0,
            timeout=WAIT,
            what="the workers to stop",
        )
        assert a._stop_requested.is_set()
    finally:
        a.stop(timeout=5)


def test_leader_election_needs_a_lease_name_and_a_namespace(api_server, tmp_path):
    with pytest.raises(ValueError, match=r"LeaderElectionConfig\(name=\.\.\.\)"):
        Manager(api_client=api_server.api_client(), leader_election=LeaderElectionConfig())
    with pytest.raises(ConfigurationError, match="leader_election_namespace"):
        resolve_namespace(None, what="leader election", path=str(tmp_path / "missing"))
    (tmp_path / "namespace").write_text("operators\n")
    assert (
        resolve_namespace(None, what="leader election", path=str(tmp_path / "namespace"))
        == "operators"
    )
    assert (
        resolve_namespace("given", what="leader election", path=str(tmp_path / "missing"))
        == "given"
    )


def test_by_default_losing_the_lease_ends_the_process_with_status_1(api_server, tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from pyinformers.controller import Controller
        from pyinformers.manager import Manager
        from pyinformers.manager._leader import LeaderElectionConfig
        from pyinformers.leaderelection import ElectionTiming
        from pyinformers.resources import CONFIGMAPS

        class Idle(Controller):
            def __init__(self, factory):
                super().__init__("idle", metrics_registry=False)
                self.watch(factory.informer(CONFIGMAPS))
            def reconcile(self, key):
                return None

        manager = Manager(kubeconfig=sys.argv[1], metrics_port=0, health_port=0, namespace="default",
                          leader_election=LeaderElectionConfig(
                              name="exit-test", namespace="default",
                              timing=ElectionTiming(lease_duration=2, renew_deadline=1.5, retry_period=0.25),
                              identity="child"))
        manager.add(Idle(manager.factory))
        print("starting", flush=True)
        manager.run()
        sys.exit(0)
        """
    )
    kubeconfig = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    child = subprocess.Popen(
        [sys.executable, "-c", script, kubeconfig],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        leases = ResourceClient(api_server.api_client(), LEASES)

        def held_by_child():
            try:
                return leases.get("exit-test", "default")["spec"]["holderIdentity"] == "child"
            except Exception:
                return False

        eventually(held_by_child, timeout=60, what="the child to lead")
        lease = leases.get("exit-test", "default")
        lease["spec"]["holderIdentity"] = "usurper"
        leases.replace(lease)
        assert child.wait(timeout=30) == 1
        assert "lost the leader election lease" in child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_leader_elect_flags_map_onto_the_managers_leader_election_options():
    from pyinformers.manager._operator import Operator

    operator = Operator(
        "demo-op", build=lambda factory, recorder, options: [], event_component="demo"
    )
    options = operator.parse(["--leader-elect", "--leader-election-namespace", "ops"], environ={})
    kwargs = operator.manager_options(options)
    election = kwargs["leader_election"]
    assert (election.name, election.namespace) == ("demo-op", "ops")
    import inspect

    accepted = inspect.signature(Manager).parameters
    assert all(name in accepted for name in kwargs)
