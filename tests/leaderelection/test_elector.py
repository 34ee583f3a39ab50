"""LeaderElector against the embedded API server over real HTTP, stepped by hand on a FakeClock.

The electors are driven from the test thread (no threads, no sleeps): each
step is one real acquire/renew attempt against the server; the clock moves
only between steps. Leadership can only *begin* inside a step (is_leader()
is computed from the clock, so between steps it can only end), so checking
"at most one leader" after every step checks it at every instant.
"""

from __future__ import annotations

import random

import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.clock import FakeClock
from pyinformers.leaderelection import (
    ElectionTiming,
    ElectorState,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    format_micro_time,
    parse_micro_time,
)
from pyinformers.resources import LEASES

NS = "default"
INF = float("inf")


def _client_without_retries(api_server):
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config_from_dict(api_server.kubeconfig(), client_configuration=configuration)
    configuration.retries = False
    return client.ApiClient(configuration)


class Election:
    """Candidates for one Lease, stepped on one fake clock, with every step checked."""

    def __init__(
        self,
        api_client,
        count,
        *,
        timing=None,
        release_on_cancel=False,
        seed=0,
        name="lock",
        namespace=None,
    ):
        self.namespace = (
            namespace if namespace is not None else NS
        )  # NS read now: tests may patch it
        self.clock = FakeClock()
        self.timing = timing or ElectionTiming()
        self.events = []  # (time, identity, "started" | "stopped")
        self.electors = []
        self.due = {}
        self.frozen = set()
        self.max_leaders = 0
        for index in range(count):
            self.add(
                api_client,
                f"pod-{index}",
                release_on_cancel=release_on_cancel,
                seed=seed + index,
                name=name,
            )

    def add(self, api_client, identity, *, release_on_cancel=False, seed=0, name="lock"):
        def started(identity=identity):
            self.events.append((self.clock.now(), identity, "started"))

        def stopped(identity=identity):
            self.events.append((self.clock.now(), identity, "stopped"))

        elector = LeaderElector(
            LeaseLock(api_client, name, self.namespace, identity),
            timing=self.timing,
            clock=self.clock,
            on_started_leading=started,
            on_stopped_leading=stopped,
            release_on_cancel=release_on_cancel,
            rng=random.Random(seed),
        )
        self.electors.append(elector)
        self.due[elector] = self.clock.now()
        return elector

    def leaders(self):
        return [e for e in self.electors if e.is_leader()]

    def check(self):
        count = len(self.leaders())
        self.max_leaders = max(self.max_leaders, count)
        assert count <= 1, f"two leaders at t={self.clock.now()}: {self.leaders()}"

    def run_for(self, seconds, between=None, restart=None):
        """Step every due candidate until ``seconds`` of fake time passed; ``restart(elector)``
        replaces a candidate that stopped (as a Deployment restarts a pod that exited)."""
        end = self.clock.now() + seconds
        while True:
            now = self.clock.now()
            for elector in list(self.electors):
                if elector in self.frozen or self.due[elector] > now:
                    continue
                delay = elector.step()
                self.due[elector] = INF if delay is None else now + max(delay, 0.001)
                self.check()
                if delay is None and restart is not None:
                    restart(elector)
                if between is not None:
                    between()
            upcoming = [d for e, d in self.due.items() if e not in self.frozen]
            target = min([end] + upcoming)
            if target >= end and now >= end:
                return
            self.clock.set(max(now, target))
            self.check()

    def run_until(self, predicate, limit):
        start = self.clock.now()
        while not predicate():
            assert self.clock.now() - start < limit, f"not within {limit} s (fake)"
            self.run_for(0.05)
        return self.clock.now() - start

    def leader(self):
        leaders = self.leaders()
        return leaders[0] if leaders else None


def test_micro_time_has_exactly_six_fractional_digits_and_parses_offsets():
    assert format_micro_time(1893456000.0) == "2030-01-01T00:00:00.000000Z"
    assert format_micro_time(1893456045.5) == "2030-01-01T00:00:45.500000Z"
    assert parse_micro_time("2030-01-01T02:00:45.500000+02:00") == 1893456045.5
    assert parse_micro_time("2030-01-01T00:00:40.123456789Z") == pytest.approx(1893456040.123456)
    record = LeaderElectionRecord("a", 15, 1893456000.0, 1893456001.25, 3)
    assert LeaderElectionRecord.from_spec(record.to_spec()) == record


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lease_duration=10, renew_deadline=10),
        dict(renew_deadline=2, retry_period=2),
        dict(retry_period=0),
    ],
)
def test_timing_is_validated_lease_over_renew_deadline_over_retry_period(kwargs):
    with pytest.raises(ValueError):
        ElectionTiming(**kwargs)


def test_timing_defaults_are_client_gos():
    timing = ElectionTiming()
    assert (timing.lease_duration, timing.renew_deadline, timing.retry_period, timing.jitter) == (
        15,
        10,
        2,
        1.2,
    )


def test_the_lease_is_written_as_a_real_server_expects(api_server, api_client):
    election = Election(api_client, 1)
    election.run_for(1)
    lease = ResourceClient(api_client, LEASES).get("lock", NS)
    spec = lease["spec"]
    assert spec["holderIdentity"] == "pod-0" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    for field in ("acquireTime", "renewTime"):
        assert len(spec[field]) == len("2026-01-01T00:00:00.000000Z") and spec[field].endswith("Z")
        assert spec[field][19] == "." and spec[field][20:26].isdigit()


@pytest.mark.parametrize("count", [2, 3])
def test_electors_have_exactly_one_leader_at_every_instant(api_client, count):
    election = Election(api_client, count)
    election.run_for(0.01)
    leader = election.leader()
    assert leader is not None
    for _ in range(30):
        election.run_for(2.0)
        assert election.leaders() == [leader]  # one leader, and it stays (renewals keep it)
    assert [e for e in election.events if e[2] == "started"] == [
        (1000.0, leader.identity, "started")
    ]
    followers = [e for e in election.electors if e is not leader]
    assert all(f.leader == leader.identity for f in followers)


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("jitter", [0.0, 1.2])
def test_a_frozen_leader_is_replaced_within_lease_duration_plus_retry_period(
    api_client, count, jitter
):
    timing = ElectionTiming(jitter=jitter)
    election = Election(api_client, count, timing=timing, seed=count)
    election.run_for(7.3)
    old = election.leader()
    election.frozen.add(old)  # stops renewing (a hung process, a partition)
    frozen_at = election.clock.now()
    failover = election.run_until(
        lambda: any(e.is_leader() for e in election.electors if e is not old), 60
    )
    bound = timing.lease_duration + timing.retry_period * (1 + jitter)
    assert failover <= bound
    # The frozen leader's own clock told it to stop long before anyone took over.
    assert not old.is_leader()
    assert old.valid_until is None or old.valid_until <= frozen_at + timing.renew_deadline
    election.frozen.discard(old)
    election.run_for(5)
    assert old.state is ElectorState.STOPPED and len(election.leaders()) == 1


@pytest.mark.parametrize("jitter", [0.0, 1.2])
def test_release_on_cancel_hands_over_within_one_retry_period(api_client, jitter):
    timing = ElectionTiming(jitter=jitter)
    election = Election(api_client, 3, timing=timing, release_on_cancel=True, seed=7)
    election.run_for(5.1)
    old = election.leader()
    old.stop()
    released = ResourceClient(api_client, LEASES).get("lock", NS)["spec"]
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    failover = election.run_until(lambda: election.leader() is not None, 30)
    assert failover <= timing.retry_period * (1 + jitter)
    assert (
        released["leaseTransitions"] + 1
        == ResourceClient(api_client, LEASES).get("lock", NS)["spec"]["leaseTransitions"]
    )


def test_without_release_a_clean_stop_waits_out_the_lease(api_client):
    election = Election(api_client, 2, timing=ElectionTiming(jitter=0.0))
    election.run_for(3)
    old = election.leader()
    old.stop()
    failover = election.run_until(lambda: election.leader() is not None, 30)
    assert failover > 10


@pytest.mark.parametrize("error_rate,throttle_rate", [(0.5, 0.0), (0.0, 0.5), (0.3, 0.3)])
def test_api_errors_during_renewals_never_make_two_leaders(api_server, error_rate, throttle_rate):
    api_server.faults.seed(11)
    api_client = _client_without_retries(api_server)  # every 429 reaches the elector
    election = Election(
        api_client, 3, timing=ElectionTiming(lease_duration=6, renew_deadline=4, retry_period=1)
    )
    restarts = iter(range(1000))

    def restart(elector):
        election.add(api_client, f"restarted-{next(restarts)}", seed=len(election.electors))

    election.run_for(2)
    api_server.faults.error_rate = error_rate
    api_server.faults.throttle_rate = throttle_rate
    election.run_for(300, restart=restart)
    api_server.faults.reset()
    election.run_for(15)
    assert election.max_leaders == 1
    terms = sum(e.terms for e in election.electors)
    assert terms >= 2  # the faults did cost leaderships, so handovers were exercised
    assert len(election.leaders()) == 1


def test_a_conflict_storm_on_the_lease_never_makes_two_leaders(api_client):
    meddler = ResourceClient(api_client, LEASES)
    rng = random.Random(3)
    bumps = [0]

    def meddle():
        if (
            rng.random() < 0.5
        ):  # another writer touches the Lease: every cached resourceVersion goes stale
            try:
                meddler.patch("lock", {"metadata": {"labels": {"touched": str(bumps[0])}}}, NS)
                bumps[0] += 1
            except Exception:
                pass

    election = Election(
        api_client, 3, timing=ElectionTiming(lease_duration=6, renew_deadline=4, retry_period=1)
    )
    election.run_for(120, between=meddle)
    assert bumps[0] > 50
    assert election.max_leaders == 1 and len(election.leaders()) == 1
    assert meddler.get("lock", NS)["metadata"]["labels"]["touched"]  # labels survive our PUTs


def test_on_new_leader_reports_each_leader_once(api_client):
    seen = []
    election = Election(api_client, 2, timing=ElectionTiming(jitter=0.0), release_on_cancel=True)
    watcher = election.add(api_client, "watcher")
    watcher._on_new_leader = seen.append
    election.run_for(5)
    first = election.leader()
    first.stop()
    election.run_until(lambda: election.leader() not in (None, first), 30)
    election.run_for(3)
    assert (
        seen[0] == first.identity
        and seen[-1] == election.leader().identity
        and len(seen) == len(set(seen))
    )


def test_the_health_check_fails_when_a_leader_stops_renewing(api_client):
    election = Election(api_client, 1)
    election.run_for(1)
    leader = election.leader()
    assert leader.check(tolerance=5)
    election.frozen.add(leader)  # its thread is stuck: it neither renews nor notices
    election.clock.step(15 + 4)
    assert leader.check(tolerance=5)
    election.clock.step(2)
    assert not leader.check(tolerance=5)
    assert not leader.is_leader()


def test_on_either_server_three_electors_keep_one_leader_and_hand_over_on_release(k8s):
    """The same election on the embedded server and (``--k8s-server=real``) on a real kube-apiserver."""
    api_client = k8s.api_client()
    timing = ElectionTiming(jitter=0.0)
    election = Election(
        api_client, 3, timing=timing, release_on_cancel=True, namespace=k8s.namespace
    )
    election.run_for(0.01)
    first = election.leader()
    election.run_for(30)
    assert election.leaders() == [first] and election.max_leaders == 1
    lease = ResourceClient(api_client, LEASES).get("lock", k8s.namespace)
    assert lease["spec"]["holderIdentity"] == first.identity
    assert lease["spec"]["renewTime"].endswith("Z") and len(lease["spec"]["renewTime"]) == 27
    first.stop()
    failover = election.run_until(lambda: election.leader() is not None, 30)
    assert failover <= timing.retry_period
    second = election.leader()
    election.frozen.add(second)
    failover = election.run_until(lambda: election.leader() not in (None, second), 60)
    assert failover <= timing.lease_duration + timing.retry_period
    assert election.max_leaders == 1
