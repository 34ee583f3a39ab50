"""Controller unit tests: results, errors, backoff, workers, sync and shutdown, against a fake informer.

pyinformers.testing.FakeInformer delivers events synchronously to the bound handler, so
these tests exercise the controller without any network; the integration
tests (test_controller_integration.py) use real informers over HTTP.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.clock import FakeClock
from pyinformers.controller import (
    CacheSyncTimeout,
    Controller,
    EnqueueForOwner,
    InformersNotStarted,
    Result,
    generation_changed,
)
from pyinformers.testing import FakeInformer, eventually
from pyinformers.workqueue import ItemExponentialFailureRateLimiter

WAIT = 10.0  # bound on every real-time wait for a condition


def cm(name, ns="ns", rv="1", generation=None):
    md = {"name": name, "namespace": ns, "resourceVersion": rv}
    if generation is not None:
        md["generation"] = generation
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}


class Recording(Controller):
    """Records reconciles; ``script`` maps a key to a list of outcomes (Result, None or an exception)."""

    def __init__(self, *args, script=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []
        self.script = script or {}
        self.cond = threading.Condition()

    def reconcile(self, key):
        with self.cond:
            self.calls.append(key)
            self.cond.notify_all()
        outcomes = self.script.get(key)
        outcome = outcomes.pop(0) if outcomes else None
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def wait_calls(self, n, timeout=WAIT):
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.calls) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"expected {n} reconciles, saw {self.calls}")
                self.cond.wait(remaining)


@pytest.fixture
def registry():
    return CollectorRegistry()


def sample(registry, name, **labels):
    return registry.get_sample_value(name, labels) or 0.0


def step_one(c):
    """Take one key from the controller's queue and process it on this thread."""
    key, shutdown = c.queue.get(timeout=0)
    assert not shutdown
    return key, c.process(key)


# -- results --------------------------------------------------------------------------------


def test_returning_none_forgets_the_key_and_counts_success(registry):
    c = Recording("rec", clock=FakeClock(), metrics_registry=registry)
    c.queue.add("ns/a")
    assert step_one(c) == ("ns/a", "success")
    assert c.queue.num_requeues("ns/a") == 0 and len(c.queue) == 0
    assert (
        sample(registry, "controller_runtime_reconcile_total", controller="rec", result="success")
        == 1
    )
    assert (
        sample(registry, "controller_runtime_reconcile_time_seconds_count", controller="rec") == 1
    )


def test_raising_requeues_rate_limited_and_logs_once_with_key_and_traceback(registry, caplog):
    clock = FakeClock()
    c = Recording(
        "failing",
        clock=clock,
        metrics_registry=registry,
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0),
        script={"ns/a": [RuntimeError("boom"), RuntimeError("boom again"), None]},
    )
    try:
        c.queue.add("ns/a")
        with caplog.at_level(logging.ERROR, logger="pyinformers.controller.failing"):
            assert step_one(c) == ("ns/a", "error")
        errors = [r for r in caplog.records if r.name == "pyinformers.controller.failing"]
        assert (
            len(errors) == 1 and "ns/a" in errors[0].getMessage() and errors[0].exc_info is not None
        )
        assert c.queue.num_requeues("ns/a") == 1
        # backoff: 1 s for the first failure -- not ready before, ready after
        assert len(c.queue) == 0
        clock.step(0.9)
        with pytest.raises(TimeoutError):
            c.queue.get(timeout=0)
        clock.step(0.1)
        key, _ = c.queue.get(timeout=0)  # the queue's timer queued it inside step()
        assert c.process(key) == "error"
        # second failure doubles the delay: 2 s
        clock.step(1.9)
        with pytest.raises(TimeoutError):
            c.queue.get(timeout=0)
        clock.step(0.1)
        key, _ = c.queue.get(timeout=0)
        assert c.process(key) == "success"
        assert c.queue.num_requeues("ns/a") == 0
        assert (
            sample(registry, "controller_runtime_reconcile_errors_total", controller="failing") == 2
        )
        assert (
            sample(
                registry, "controller_runtime_reconcile_total", controller="failing", result="error"
            )
            == 2
        )
    finally:
        c.stop(1)


def test_requeue_true_backs_off_through_the_rate_limiter(registry):
    clock = FakeClock()
    c = Recording(
        "requeue",
        clock=clock,
        metrics_registry=registry,
        rate_limiter=ItemExponentialFailureRateLimiter(2.0, 100.0),
        script={"ns/a": [Result(requeue=True)]},
    )
    try:
        c.queue.add("ns/a")
        assert step_one(c)[1] == "requeue"
        assert c.queue.num_requeues("ns/a") == 1
        clock.step(2.0)
        assert c.queue.get(timeout=0)[0] == "ns/a"
    finally:
        c.stop(1)


def test_requeue_after_forgets_and_reruns_after_the_delay(registry):
    clock = FakeClock()
    c = Recording(
        "later",
        clock=clock,
        metrics_registry=registry,
        script={"ns/a": [RuntimeError("x"), Result(requeue_after=30)]},
    )
    try:
        c.queue.add("ns/a")
        step_one(c)  # error: one requeue recorded
        clock.step(1)
        key, _ = c.queue.get(timeout=0)
        assert c.process(key) == "requeue_after"
        assert c.queue.num_requeues("ns/a") == 0  # forgotten
        clock.step(29.5)
        with pytest.raises(TimeoutError):
            c.queue.get(timeout=0)
        clock.step(0.5)
        assert c.queue.get(timeout=0)[0] == "ns/a"
        assert (
            sample(
                registry,
                "controller_runtime_reconcile_total",
                controller="later",
                result="requeue_after",
            )
            == 1
        )
    finally:
        c.stop(1)


def test_returning_something_else_is_an_error(registry, caplog):
    c = Recording(
        "wrongtype", clock=FakeClock(), metrics_registry=registry, script={"ns/a": [True]}
    )
    c.queue.add("ns/a")
    with caplog.at_level(logging.ERROR):
        assert step_one(c)[1] == "error"
    assert "expected a Result or None" in caplog.text
    c.stop(1)


def test_result_validates_its_fields():
    with pytest.raises(ValueError):
        Result(requeue_after=-1)
    with pytest.raises(ValueError):
        Result(requeue_after=float("nan"))
    with pytest.raises(TypeError):
        Result(requeue="yes")
    assert Result().done and not Result(requeue=True).done and not Result(requeue_after=0).done


# -- wiring --------------------------------------------------------------------------------


def test_watch_binds_handler_and_predicates_to_the_queue(registry):
    inf = FakeInformer()
    c = Recording("wired", clock=FakeClock(), metrics_registry=registry)
    c.watch(inf, predicates=[generation_changed], resync_period=30)
    assert inf.resync_periods == [30]
    inf.add(cm("a", generation=1))
    inf.update(cm("a", rv="1", generation=1), cm("a", rv="2", generation=1))  # dropped
    inf.update(cm("b", rv="1", generation=1), cm("b", rv="2", generation=2))
    keys = [c.queue.get(timeout=0)[0] for _ in range(len(c.queue))]
    assert keys == ["ns/a", "ns/b"]
    c.stop(1)


def test_owner_handler_enqueues_the_owner(registry):
    inf = FakeInformer()
    c = Recording("owners", clock=FakeClock(), metrics_registry=registry)
    c.watch(inf, EnqueueForOwner("Owner", owner_group="example.com"))
    child = cm("child")
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "example.com/v1",
            "kind": "Owner",
            "name": "o",
            "uid": "u",
            "controller": True,
        }
    ]
    inf.delete(child)
    assert c.queue.get(timeout=0)[0] == "ns/o"
    c.stop(1)


def test_invalid_configuration_fails_at_construction():
    with pytest.raises(ValueError):
        Recording("bad name with spaces")
    with pytest.raises(ValueError):
        Recording("ok", workers=0)
    with pytest.raises(TypeError):
        Recording("ok2").watch(object())
    with pytest.raises(TypeError):
        Recording("ok3").watch(FakeInformer(), handler=lambda e: ["k"])


def test_the_default_name_is_the_class_name_in_lower_case(registry):
    assert Recording(metrics_registry=registry).name == "recording"


# -- running -------------------------------------------------------------------------------


def test_sync_timeout_names_the_informers_that_did_not_sync(registry):
    c = Recording("unsynced", metrics_registry=registry, sync_timeout=0.05)
    c.watch(FakeInformer(name="v1/configmaps", synced=True))
    c.watch(FakeInformer(name="apps/v1/deployments", synced=False))
    with pytest.raises(CacheSyncTimeout) as info:
        c.start()
    message = str(info.value)
    assert "apps/v1/deployments" in message and "configmaps" not in message
    assert not c.is_running() and c.queue.shutting_down()


def test_a_factory_never_started_is_an_immediate_error_naming_the_informers(registry):
    c = Recording("early", metrics_registry=registry, sync_timeout=60)
    c.watch(FakeInformer(name="v1/configmaps", synced=True))
    c.watch(FakeInformer(name="apps/v1/deployments", synced=False, running=False))
    began = time.monotonic()
    with pytest.raises(
        InformersNotStarted, match=r"apps/v1/deployments.*factory\.start\(\)"
    ) as info:
        c.start()
    assert time.monotonic() - began < 5, "it must not wait for sync_timeout"
    assert info.value.informers == ["apps/v1/deployments"]
    assert not c.is_running()


def test_a_controller_that_watches_nothing_cannot_start(registry):
    c = Recording("idle", metrics_registry=registry)
    with pytest.raises(RuntimeError, match="watches nothing: call self.watch"):
        c.start()


def test_forgetting_super_init_is_a_clear_error_at_construction(registry):
    class Forgetful(Controller):
        def __init__(self, informer):
            self.informer = informer  # no super().__init__()

    with pytest.raises(TypeError, match=r"Forgetful.__init__ must call super\(\).__init__"):
        Forgetful(FakeInformer())


def test_using_the_base_before_super_init_names_the_fix(registry):
    class Early(Controller):
        def __init__(self, informer):
            self.watch(informer)  # before super().__init__()
            super().__init__(metrics_registry=registry)

    with pytest.raises(
        AttributeError, match=r"Controller.__init__ has not run yet; call super\(\).__init__"
    ):
        Early(FakeInformer())


def test_workers_reconcile_events_and_run_returns_after_stop(registry):
    inf = FakeInformer()
    c = Recording("runner", workers=3, metrics_registry=registry)
    c.watch(inf)
    stop = threading.Event()
    t = threading.Thread(target=c.run, kwargs={"stop": stop}, name="test-runner")
    t.start()
    try:
        eventually(c.is_running, what="controller running")
        assert c.workers_alive() == 3
        names = sorted(
            th.name
            for th in threading.enumerate()
            if th.name.startswith("pyinformers-worker-runner")
        )
        assert names == [f"pyinformers-worker-runner-{i}" for i in range(3)]
        for i in range(5):
            inf.add(cm(f"o{i}"))
        c.wait_calls(5)
        assert sorted(c.calls) == [f"ns/o{i}" for i in range(5)]
        assert (
            sample(registry, "controller_runtime_max_concurrent_reconciles", controller="runner")
            == 3
        )
    finally:
        stop.set()
        t.join(WAIT)
    assert not t.is_alive()
    assert c.workers_alive() == 0
    assert inf.handlers == []  # handler removed from the informer


def test_errors_never_kill_a_worker(registry):
    inf = FakeInformer()
    c = Recording(
        "sturdy",
        workers=1,
        metrics_registry=registry,
        rate_limiter=ItemExponentialFailureRateLimiter(0.0, 0.0),
        script={"ns/a": [RuntimeError("1"), RuntimeError("2"), KeyError("3"), None]},
    )
    c.watch(inf)
    logging.getLogger("pyinformers.controller.sturdy").disabled = True
    try:
        c.start()
        inf.add(cm("a"))
        c.wait_calls(4)
        assert c.healthy() and c.workers_alive() == 1
        inf.add(cm("b"))
        c.wait_calls(5)
    finally:
        logging.getLogger("pyinformers.controller.sturdy").disabled = False
        assert c.stop(WAIT)


def test_shutdown_lets_the_in_flight_reconcile_finish_and_takes_no_new_keys(registry):
    entered, release = threading.Event(), threading.Event()
    finished = []

    class Slow(Controller):
        watches_optional = True  # the test feeds the queue itself

        def reconcile(self, key):
            entered.set()
            release.wait(WAIT)
            finished.append(key)

    c = Slow("slow", metrics_registry=registry)
    c.start()
    c.queue.add("ns/first")
    assert entered.wait(WAIT)
    c.queue.add("ns/second")  # queued behind the in-flight one
    stopper = threading.Thread(target=lambda: c.stop(WAIT), name="test-stopper")
    stopper.start()
    eventually(c.queue.shutting_down, what="shutdown started")
    assert c.workers_alive() == 1  # still finishing
    release.set()
    stopper.join(WAIT)
    assert finished == ["ns/first"]
    assert c.workers_alive() == 0


def test_stop_returns_false_within_its_bound_when_a_reconcile_is_stuck(registry, caplog):
    entered, release = threading.Event(), threading.Event()

    class Stuck(Controller):
        watches_optional = True  # the test feeds the queue itself

        def reconcile(self, key):
            entered.set()
            release.wait(WAIT)

    c = Stuck("stuck", metrics_registry=registry)
    c.start()
    c.queue.add("ns/stuck-key")
    assert entered.wait(WAIT)
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="pyinformers.controller.stuck"):
        assert c.stop(0.2) is False
    assert time.monotonic() - t0 < 2.0
    assert "ns/stuck-key" in caplog.text
    release.set()
    assert c.stop(WAIT) is True


def test_stop_while_waiting_for_sync_returns_without_starting_workers(registry):
    c = Recording("early-stop", metrics_registry=registry, sync_timeout=WAIT)
    c.watch(FakeInformer(synced=False))
    t = threading.Thread(target=c.start, name="test-starter")
    t.start()
    c.stop(1)
    t.join(WAIT)
    assert not t.is_alive() and c.workers_alive() == 0


def test_a_controller_runs_once(registry):
    c = Recording("once", metrics_registry=registry)
    c.watch(FakeInformer())
    c.start()
    with pytest.raises(RuntimeError):
        c.start()
    with pytest.raises(RuntimeError):
        c.watch(FakeInformer())
    assert c.stop(WAIT)
    assert "stopped" in repr(c)


def test_one_key_is_never_reconciled_concurrently_and_the_last_change_is_seen(registry):
    """8 workers, 4 hot keys, a storm of updates from 4 threads."""
    versions = {}  # key -> latest version written (the "server")
    lock = threading.Lock()
    active, seen_after = {}, {}
    violations = []

    class Checker(Controller):
        watches_optional = True  # the test feeds the queue itself

        def reconcile(self, key):
            with lock:
                if active.get(key):
                    violations.append(key)
                active[key] = True
                current = versions[key]
            time.sleep(0)  # let other workers run while "in" the reconcile
            with lock:
                active[key] = False
                seen_after[key] = current

    c = Checker("storm", workers=8, metrics_registry=registry)
    c.start()
    keys = [f"ns/hot-{i}" for i in range(4)]

    def storm(seed):
        for n in range(2000):
            key = keys[(n * 7 + seed) % len(keys)]
            with lock:
                versions[key] = versions.get(key, 0) + 1
            c.queue.add(key)

    producers = [
        threading.Thread(target=storm, args=(s,), name=f"test-storm-{s}") for s in range(4)
    ]
    for p in producers:
        p.start()
    for p in producers:
        p.join(WAIT)
    try:
        eventually(
            lambda: all(seen_after.get(k) == versions[k] for k in keys),
            what="last versions reconciled",
        )
        assert violations == []
    finally:
        assert c.stop(WAIT)


def test_metrics_registry_false_records_nothing_anywhere():
    from prometheus_client import REGISTRY

    c = Recording("silent-controller", clock=FakeClock(), metrics_registry=False)
    c.queue.add("ns/a")
    assert step_one(c)[1] == "success"
    assert c.metrics_registry is None
    assert (
        REGISTRY.get_sample_value(
            "controller_runtime_reconcile_total",
            {"controller": "silent-controller", "result": "success"},
        )
        is None
    )
    assert REGISTRY.get_sample_value("workqueue_adds_total", {"name": "silent-controller"}) is None
