"""The stale-read guard on its own: records writes per key, defers until the cache shows them."""

from __future__ import annotations

import logging

import pytest

from pyinformers.clock import FakeClock
from pyinformers.controller._consistency import ConsistencyGuard
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS
from pyinformers.testing import FakeInformer


def cm(name: str, rv: str, ns: str = "ns") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
    }


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def informer():
    return FakeInformer(CONFIGMAPS)


@pytest.fixture
def guard(informer, clock):
    return ConsistencyGuard([informer], clock=clock, timeout=5.0)


def test_a_key_without_writes_is_reconciled_at_once(guard):
    assert guard.check("ns/a") is None


def test_a_key_is_deferred_until_the_cache_holds_the_version_it_wrote(guard, informer):
    informer.add(cm("a", "5"))
    guard.record("ns/a", CONFIGMAPS, "update", cm("a", "7"))
    assert guard.check("ns/a") == pytest.approx(0.05)
    assert guard.check("ns/a") == pytest.approx(0.1)  # the delay doubles
    informer.update(cm("a", "5"), cm("a", "7"))
    assert guard.check("ns/a") is None
    assert guard.stats().tracked == 0 and guard.stats().deferred == 2


def test_a_newer_version_in_the_cache_also_releases_the_key(guard, informer):
    guard.record("ns/a", CONFIGMAPS, "update", cm("a", "7"))
    informer.add(cm("a", "9"))
    assert guard.check("ns/a") is None


def test_a_created_child_holds_its_owners_key_until_it_is_cached(guard, informer):
    guard.record("ns/owner", CONFIGMAPS, "create", cm("child", "3"))
    assert guard.check("ns/owner") is not None
    informer.add(cm("child", "3"))
    assert guard.check("ns/owner") is None


def test_a_delete_is_caught_up_once_the_object_left_the_cache(guard, informer):
    informer.add(cm("a", "5"))
    guard.record("ns/a", CONFIGMAPS, "delete", cm("a", "6"))
    assert guard.check("ns/a") is not None
    informer.delete(cm("a", "5"))
    assert guard.check("ns/a") is None


def test_a_write_to_a_resource_not_cached_is_not_tracked(guard):
    guard.record(
        "ns/a",
        DEPLOYMENTS,
        "create",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "3"},
        },
    )
    assert guard.check("ns/a") is None and guard.stats().recorded == 0


def test_a_status_answer_or_an_opaque_resource_version_never_defers(guard):
    guard.record("ns/a", CONFIGMAPS, "delete", {"kind": "Status", "status": "Success"})
    guard.record("ns/a", CONFIGMAPS, "update", cm("a", "opaque-token"))
    assert guard.check("ns/a") is None


def test_after_the_timeout_the_key_runs_anyway_and_says_why(guard, clock, caplog):
    guard.record("ns/a", CONFIGMAPS, "update", cm("a", "7"))
    assert guard.check("ns/a") is not None
    clock.step(5.0)
    with caplog.at_level(logging.WARNING):
        assert guard.check("ns/a") is None
    assert "has not caught up with its own write" in caplog.text and "ns/a" in caplog.text
    assert guard.stats().timeouts == 1 and guard.stats().tracked == 0


def test_no_deferral_outlasts_the_timeout(guard, clock):
    guard.record("ns/a", CONFIGMAPS, "update", cm("a", "7"))
    waited = 0.0
    while (delay := guard.check("ns/a")) is not None:
        assert delay > 0
        clock.step(delay)
        waited += delay
    assert waited == pytest.approx(5.0)


def test_at_most_max_keys_are_tracked_the_oldest_dropped_first(informer, clock):
    guard = ConsistencyGuard([informer], clock=clock, max_keys=2)
    for name in ("a", "b", "c"):
        guard.record(f"ns/{name}", CONFIGMAPS, "update", cm(name, "7"))
    assert guard.stats().tracked == 2 and guard.stats().evicted == 1
    assert guard.check("ns/a") is None and guard.check("ns/c") is not None


def test_forget_drops_a_keys_records(guard):
    guard.record("ns/a", CONFIGMAPS, "update", cm("a", "7"))
    guard.forget("ns/a")
    assert guard.check("ns/a") is None


def test_the_timeout_and_bound_are_checked():
    with pytest.raises(ValueError, match="timeout must be > 0"):
        ConsistencyGuard(timeout=0)
    with pytest.raises(ValueError, match="max_keys"):
        ConsistencyGuard(max_keys=0)
