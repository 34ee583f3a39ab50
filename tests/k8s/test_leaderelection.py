"""Leader election on either server (the ``k8s`` fixture): the Lease as kube-apiserver validates it.

The electors are stepped by hand on a fake clock, as in test_leaderelection.py (whose
``Election`` harness this reuses), but against the run's server and in the test's own
namespace; with ``--k8s-server=real`` every Lease write goes through kube-apiserver's
validation (MicroTime with exactly six fractional digits, positive durations) and its
optimistic concurrency.
"""

from __future__ import annotations

import pytest

import tests.leaderelection.test_elector as test_leaderelection
from pyinformers.api._client import ResourceClient
from pyinformers.leaderelection import ElectionTiming
from pyinformers.resources import LEASES
from tests.leaderelection.test_elector import Election


@pytest.fixture
def election_ns(k8s, monkeypatch):
    monkeypatch.setattr(test_leaderelection, "NS", k8s.namespace)
    return k8s.namespace


def test_three_candidates_elect_one_leader_that_keeps_renewing(k8s, election_ns):
    api = k8s.api_client()
    election = Election(api, 3)
    election.run_for(0.01)
    leader = election.leader()
    assert leader is not None
    for _ in range(10):
        election.run_for(2.0)
        assert election.leaders() == [leader]
    spec = ResourceClient(api, LEASES).get("lock", namespace=election_ns)["spec"]
    assert spec["holderIdentity"] == leader.identity and spec["leaseDurationSeconds"] == 15
    assert spec["renewTime"][19] == "." and len(spec["renewTime"]) == len(
        "2026-01-01T00:00:00.000000Z"
    )


def test_a_released_lease_is_taken_over_within_one_retry_period(k8s, election_ns):
    api = k8s.api_client()
    timing = ElectionTiming(jitter=0.0)
    election = Election(api, 2, timing=timing, release_on_cancel=True, seed=3)
    election.run_for(3.1)
    old = election.leader()
    old.stop()
    released = ResourceClient(api, LEASES).get("lock", namespace=election_ns)["spec"]
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    failover = election.run_until(lambda: election.leader() is not None, 30)
    assert failover <= timing.retry_period
    after = ResourceClient(api, LEASES).get("lock", namespace=election_ns)["spec"]
    assert after["leaseTransitions"] == released["leaseTransitions"] + 1
