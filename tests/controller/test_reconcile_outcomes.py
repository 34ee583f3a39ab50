"""Terminal errors, expected races, the soft deadline, the reconcile's clock and reading your own writes."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.api import AlreadyExists, Conflict, NotFound
from pyinformers.api._observe import notify_write
from pyinformers.clock import FakeClock
from pyinformers.controller import Controller, ObjectBeingDeleted, Result, TerminalError
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import FakeInformer, eventually

WAIT = 10.0


def cm(name, rv="1", ns="ns"):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
    }


class Scripted(Controller):
    """``reconcile`` runs ``self.step(key)``, set by the test."""

    def __init__(self, informer, **options):
        options.setdefault("metrics_registry", CollectorRegistry())
        super().__init__("scripted", **options)
        self.watch(informer)
        self.step = lambda key: None

    def reconcile(self, key):
        return self.step(key)


def one(controller, key="ns/a"):
    """Process ``key`` once by hand, as a worker would."""
    controller.queue.add(key)
    got, _ = controller.queue.get()
    return controller.process(got)


def sample(controller, name):
    return controller.metrics_registry.get_sample_value(name, {"controller": controller.name})


@pytest.fixture
def informer():
    return FakeInformer(CONFIGMAPS)


def test_a_terminal_error_is_logged_once_counted_and_not_retried(informer, caplog):
    c = Scripted(informer, clock=FakeClock())

    def bad(key):
        try:
            raise ValueError("schedule '* *' has two fields")
        except ValueError as err:
            raise TerminalError("spec.schedule is not a cron expression") from err

    c.step = bad
    with caplog.at_level(logging.DEBUG, logger="pyinformers.controller.scripted"):
        assert one(c) == "error"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None
    assert "failed for good" in errors[0].getMessage()
    assert "spec.schedule is not a cron expression" in errors[0].getMessage()
    assert "two fields" in errors[0].getMessage()
    assert c.queue.num_requeues("ns/a") == 0 and len(c.queue) == 0
    assert sample(c, "controller_runtime_terminal_reconcile_errors_total") == 1
    assert sample(c, "controller_runtime_reconcile_errors_total") == 1


@pytest.mark.parametrize(
    "error, reason",
    [
        (Conflict("the object has been modified", code=409, reason="Conflict"), "Conflict"),
        (NotFound('configmaps "a" not found', code=404, reason="NotFound"), "NotFound"),
        (AlreadyExists("already exists", code=409, reason="AlreadyExists"), "AlreadyExists"),
        (ObjectBeingDeleted("ConfigMap ns/a", "2026-01-01T00:00:00Z"), "BeingDeleted"),
    ],
)
def test_an_expected_race_is_one_info_line_with_the_key_and_retried(
    informer, caplog, error, reason
):
    c = Scripted(informer, clock=FakeClock())

    def racing(key):
        raise error

    c.step = racing
    with caplog.at_level(logging.DEBUG, logger="pyinformers.controller.scripted"):
        assert one(c) == "error"
    above_debug = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert [r.levelname for r in above_debug] == ["INFO"]
    assert "'ns/a'" in above_debug[0].getMessage() and reason in above_debug[0].getMessage()
    assert above_debug[0].exc_info is None
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records)  # the traceback
    assert c.queue.num_requeues("ns/a") == 1


def test_an_unexpected_exception_keeps_its_traceback_at_error(informer, caplog):
    c = Scripted(informer, clock=FakeClock())

    def broken(key):
        raise KeyError("spec")

    c.step = broken
    with caplog.at_level(logging.INFO, logger="pyinformers.controller.scripted"):
        one(c)
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.exc_info is not None


def test_now_reads_the_wall_clock_apart_from_the_queue_clock(informer):
    wall = FakeClock()
    queue_clock = FakeClock()
    c = Scripted(informer, clock=queue_clock, wall_clock=wall)
    assert c.now() == datetime(2026, 1, 1, tzinfo=timezone.utc)
    wall.step(3600)
    assert c.now() == datetime(2026, 1, 1, 1, tzinfo=timezone.utc)
    assert queue_clock.now() == 1000.0  # the queue's time did not move
    assert Scripted(informer, clock=queue_clock).now() == datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_a_reconcile_past_its_soft_deadline_is_warned_about_and_shown_on_metrics(informer, caplog):
    c = Scripted(informer, reconcile_deadline=0.05)
    release = threading.Event()
    c.step = lambda key: release.wait(WAIT) and None
    c.start()
    try:
        with caplog.at_level(logging.WARNING, logger="pyinformers.controller.scripted"):
            c.queue.add("ns/slow")
            eventually(
                lambda: sample(c, "pyinformers_controller_reconciles_over_deadline") == 1,
                WAIT,
                what="the running reconcile counted as overdue at a scrape",
            )
            release.set()
            eventually(lambda: not c.in_flight(), WAIT, what="the reconcile to end")
        warnings = [r.getMessage() for r in caplog.records if "past its deadline" in r.getMessage()]
        assert (
            len(warnings) == 1 and "'ns/slow'" in warnings[0] and "cannot be stopped" in warnings[0]
        )
        assert sample(c, "pyinformers_controller_reconcile_deadline_exceeded_total") == 1
        assert sample(c, "pyinformers_controller_reconciles_over_deadline") == 0
    finally:
        release.set()
        c.stop(5)


def test_a_bad_deadline_is_refused():
    with pytest.raises(ValueError, match="reconcile_deadline"):
        Scripted(FakeInformer(CONFIGMAPS), reconcile_deadline=0)


def test_a_key_that_wrote_is_deferred_until_the_cache_shows_the_write(informer):
    informer.add(cm("a", rv="5"))
    c = Scripted(informer, clock=FakeClock())
    c.step = lambda key: notify_write(
        CONFIGMAPS, "update", cm("a", rv="6")
    )  # as a client reports it
    assert one(c) == "success"
    assert one(c) == "deferred"  # the cache still holds rv 5
    assert sample(c, "pyinformers_controller_stale_read_deferrals_total") == 1
    assert sample(c, "pyinformers_controller_stale_read_tracked_keys") == 1
    informer.update(cm("a", rv="5"), cm("a", rv="6"))
    c.step = lambda key: None
    assert one(c) == "success"
    assert sample(c, "pyinformers_controller_stale_read_tracked_keys") == 0
    # The deferred key was put back (in real time): it comes round again without an event.
    eventually(lambda: len(c.queue) == 1, WAIT, what="the deferred key re-added")


def test_with_read_your_writes_off_nothing_is_deferred(informer):
    informer.add(cm("a", rv="5"))
    c = Scripted(informer, clock=FakeClock(), read_your_writes=False)
    c.step = lambda key: notify_write(CONFIGMAPS, "update", cm("a", rv="6"))
    assert one(c) == "success" and one(c) == "success"


def test_a_key_another_replica_owns_forgets_what_this_one_wrote(informer):
    informer.add(cm("a", rv="5"))
    c = Scripted(informer, clock=FakeClock())

    class Refuse:
        def enter(self, key):
            return False

        def exit(self, key):
            pass

    c.step = lambda key: notify_write(CONFIGMAPS, "update", cm("a", rv="6"))
    one(c)
    c.set_admission(Refuse())
    assert one(c) == "dropped"
    assert c.consistency.stats().tracked == 0


def test_a_requeue_result_after_a_write_waits_for_the_cache_not_for_conflicts(informer):
    informer.add(cm("a", rv="5"))
    clock = FakeClock()
    c = Scripted(informer, clock=clock)
    c.step = lambda key: notify_write(CONFIGMAPS, "update", cm("a", rv="6")) or Result(requeue=True)
    assert one(c) == "requeue"
    clock.step(1)  # the backoff of the requeue
    assert len(c.queue) == 1
    assert c.process(c.queue.get()[0]) == "deferred"
