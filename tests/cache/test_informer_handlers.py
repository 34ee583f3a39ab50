"""Handler registrations: one buffer and one thread per handler, batched wake-ups, resync schedule."""

from __future__ import annotations

import threading

import pytest

from pyinformers.cache._processor import (
    _ADD,
    _DELETE,
    _UPDATE,
    MINIMUM_RESYNC_PERIOD,
    HandlerSet,
    ResourceEventHandlerFuncs,
    effective_resync_period,
    track_informer,
)
from pyinformers.cache._transforms import chain, drop_managed_fields
from pyinformers.clock import FakeClock
from pyinformers.testing import eventually


class Recorder:
    """A handler recording every call, optionally blocking until released."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.calls: list[tuple] = []
        self.gate = gate
        self.lock = threading.Lock()

    def _record(self, call):
        if self.gate is not None:
            assert self.gate.wait(10), "test gate never opened"
        with self.lock:
            self.calls.append(call)

    def on_add(self, obj, is_in_initial_list):
        self._record(("add", obj, is_in_initial_list))

    def on_update(self, old, new):
        self._record(("update", old, new))

    def on_delete(self, obj):
        self._record(("delete", obj))


@pytest.fixture
def handler_set():
    lock = threading.RLock()
    hs = HandlerSet(informer_name="test", lock=lock, clock=FakeClock())
    yield hs
    assert hs.stop(timeout=5.0)


def register(hs, handler, *, resync_period=0.0, synced=lambda: True):
    with hs.lock:
        reg = hs.new_registration(handler, resync_period=resync_period, upstream_synced=synced)
        hs.add(reg)
    return reg


def test_a_handler_gets_notifications_in_order_on_its_own_named_thread(handler_set):
    seen_threads = set()
    rec = Recorder()
    original = rec.on_update

    def on_update(old, new):
        seen_threads.add(threading.current_thread().name)
        original(old, new)

    rec.on_update = on_update
    reg = register(handler_set, rec)
    handler_set.start()
    with handler_set.lock:
        handler_set.distribute((_ADD, "a", False))
        for i in range(100):
            handler_set.distribute((_UPDATE, i, i + 1))
        handler_set.distribute((_DELETE, "a", None))
    eventually(lambda: len(rec.calls) == 102)
    assert rec.calls[0] == ("add", "a", False)
    assert [c[1] for c in rec.calls[1:-1]] == list(range(100))
    assert rec.calls[-1] == ("delete", "a")
    assert seen_threads == {f"pyinformers-handler-test-{reg.number}"}
    assert reg.handled == 102 and reg.backlog() == 0


def test_a_slow_handler_delays_no_other_and_its_backlog_is_visible(handler_set):
    gate = threading.Event()
    slow, fast = Recorder(gate), Recorder()
    slow_reg = register(handler_set, slow)
    register(handler_set, fast)
    handler_set.start()
    with handler_set.lock:
        for i in range(50):
            handler_set.distribute((_ADD, i, False))
    eventually(lambda: len(fast.calls) == 50, what="the fast handler")
    # The slow one holds item 0 and has the other 49 buffered.
    eventually(lambda: slow_reg.backlog() == 49, what="the slow handler's backlog")
    assert slow.calls == []
    gate.set()
    eventually(lambda: len(slow.calls) == 50)
    assert slow_reg.backlog() == 0


def test_a_busy_handler_thread_is_not_woken_per_notification(handler_set):
    gate = threading.Event()
    rec = Recorder(gate)
    reg = register(handler_set, rec)
    handler_set.start()
    notifies = []
    original_notify = reg._cond.notify

    def counting_notify(n=1):
        notifies.append(n)
        original_notify(n)

    reg._cond.notify = counting_notify
    with handler_set.lock:
        handler_set.distribute((_ADD, 0, False))  # wakes the sleeping thread: one notify
    eventually(
        lambda: not reg._sleeping and reg.backlog() == 0, what="the handler thread to be busy"
    )
    with handler_set.lock:
        for i in range(1, 1000):
            handler_set.distribute((_ADD, i, False))
    gate.set()
    eventually(lambda: len(rec.calls) == 1000)
    assert len(notifies) <= 1, f"{len(notifies)} wake-ups for 1000 notifications"


def test_handler_errors_are_counted_and_do_not_stop_the_handler(handler_set):
    got = []

    def on_add(obj, initial):
        if obj == "bad":
            raise RuntimeError("boom")
        got.append(obj)

    reg = register(handler_set, ResourceEventHandlerFuncs(on_add=on_add))
    handler_set.start()
    with handler_set.lock:
        for obj in ("a", "bad", "b"):
            handler_set.distribute((_ADD, obj, False))
    eventually(lambda: reg.handled == 3)
    assert got == ["a", "b"] and reg.errors == 1


def test_a_handler_with_no_callbacks_is_rejected(handler_set):
    with pytest.raises(TypeError, match="at least one of"):
        register(handler_set, object())
    with pytest.raises(TypeError, match="not callable"):
        register(handler_set, ResourceEventHandlerFuncs(on_add="nope"))


def test_missing_callbacks_are_skipped(handler_set):
    deletes = []
    reg = register(handler_set, ResourceEventHandlerFuncs(on_delete=deletes.append))
    handler_set.start()
    with handler_set.lock:
        handler_set.distribute((_ADD, "x", False))
        handler_set.distribute((_UPDATE, "x", "y"))
        handler_set.distribute((_DELETE, "y", None))
    eventually(lambda: reg.handled == 3)
    assert deletes == ["y"]


def test_registration_syncs_after_upstream_and_its_initial_adds(handler_set):
    upstream = threading.Event()
    gate = threading.Event()
    rec = Recorder(gate)
    reg = register(handler_set, rec, synced=upstream.is_set)
    handler_set.start()
    with handler_set.lock:
        handler_set.distribute_initial("a")
        handler_set.distribute_initial("b")
    assert not reg.has_synced()
    upstream.set()
    assert not reg.has_synced(), "initial adds not handled yet"
    gate.set()
    eventually(reg.has_synced)
    assert rec.calls == [("add", "a", True), ("add", "b", True)]


def test_remove_stops_the_thread_and_no_more_notifications_arrive(handler_set):
    rec = Recorder()
    reg = register(handler_set, rec)
    handler_set.start()
    with handler_set.lock:
        handler_set.distribute((_ADD, 1, False))
    eventually(lambda: rec.calls)
    assert reg.remove(timeout=5.0)
    assert reg.is_removed() and len(handler_set) == 0
    assert not any(t.name == f"pyinformers-handler-{reg.name}" for t in threading.enumerate())
    with handler_set.lock:
        handler_set.distribute((_ADD, 2, False))
    assert rec.calls == [("add", 1, False)]
    assert reg.remove() is True  # idempotent


def test_registrations_added_before_start_buffer_until_start():
    hs = HandlerSet(informer_name="t2", lock=threading.RLock())
    rec = Recorder()
    reg = register(hs, rec)
    with hs.lock:
        hs.distribute((_ADD, 1, False))
    assert reg.backlog() == 1 and "pending" in repr(reg)
    hs.start()
    eventually(lambda: rec.calls == [("add", 1, False)])
    assert hs.stop(timeout=5.0)


def test_resync_is_due_per_handler_period_on_the_clock():
    clock = FakeClock()
    hs = HandlerSet(informer_name="r", lock=threading.RLock(), clock=clock)
    every2, every5, never = Recorder(), Recorder(), Recorder()
    r2 = register(hs, every2, resync_period=2.0)
    r5 = register(hs, every5, resync_period=5.0)
    register(hs, never, resync_period=0)
    assert not hs.should_resync()
    due_at = {}
    for second in range(1, 11):
        clock.step(1.0)
        if hs.should_resync():
            due_at[second] = {r.number for r in hs._syncing}
    assert due_at == {
        2: {r2.number},
        4: {r2.number},
        5: {r5.number},
        6: {r2.number},
        8: {r2.number},
        10: {r2.number, r5.number},
    }
    # A sync notification reaches only the syncing handlers.
    hs.start()
    with hs.lock:
        hs.distribute((_UPDATE, "o", "o"), sync=True)
        hs.distribute((_ADD, "n", False))
    eventually(lambda: len(every2.calls) == 2 and len(every5.calls) == 2 and len(never.calls) == 1)
    assert never.calls == [("add", "n", False)]
    assert hs.stop(timeout=5.0)


@pytest.mark.parametrize(
    "requested, check, started, expected",
    [
        (0, 30, False, (0, 30)),
        (10, 30, False, (10, 10)),  # lowers the check period before start
        (10, 30, True, (30, 30)),  # raised to it after start
        (60, 30, True, (60, 30)),
        (0.01, 0, False, (MINIMUM_RESYNC_PERIOD, MINIMUM_RESYNC_PERIOD)),
        (5, 0, True, (0, 0)),  # started without resync: cannot add one
    ],
)
def test_effective_resync_period(requested, check, started, expected):
    assert effective_resync_period(requested, check, started=started) == expected


def test_negative_resync_period_is_rejected():
    with pytest.raises(ValueError):
        effective_resync_period(-1, 0, started=False)


def test_drop_managed_fields_removes_only_managed_fields_and_is_idempotent():
    obj = {"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}]}, "spec": {"x": 1}}
    assert drop_managed_fields(obj) is obj
    assert obj == {"metadata": {"name": "a"}, "spec": {"x": 1}}
    assert drop_managed_fields(obj) == {"metadata": {"name": "a"}, "spec": {"x": 1}}
    assert drop_managed_fields({"kind": "X"}) == {"kind": "X"}
    assert drop_managed_fields(None) is None


def test_chain_applies_transforms_in_order():
    def add_label(obj):
        obj["metadata"].setdefault("labels", {})["seen"] = "1"
        return obj

    both = chain(drop_managed_fields, None, add_label)
    obj = both({"metadata": {"managedFields": [], "name": "a"}})
    assert obj == {"metadata": {"name": "a", "labels": {"seen": "1"}}}
    assert chain(add_label) is add_label
    with pytest.raises(TypeError):
        chain(42)


def test_metrics_expose_backlog_and_counts_at_scrape_time(handler_set):
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    gate = threading.Event()
    rec = Recorder(gate)
    reg = register(handler_set, rec)

    class FakeInformer:
        name = "fake/v1/things"
        indexer = [1, 2, 3]

        def has_synced(self):
            return True

        def healthy(self):
            return True

        def object_errors(self):
            return {"transform": 2}

        def registrations(self):
            return [reg]

    informer = FakeInformer()
    track_informer(informer, registry)
    handler_set.start()
    with handler_set.lock:
        for i in range(5):
            handler_set.distribute((_ADD, i, False))
    eventually(lambda: reg.backlog() == 4)
    labels = {"informer": "fake/v1/things", "handler": str(reg.number)}
    assert registry.get_sample_value("pyinformers_informer_handler_backlog", labels) == 4
    assert (
        registry.get_sample_value(
            "pyinformers_informer_cache_objects", {"informer": "fake/v1/things"}
        )
        == 3
    )
    assert (
        registry.get_sample_value("pyinformers_informer_healthy", {"informer": "fake/v1/things"})
        == 1
    )
    assert (
        registry.get_sample_value(
            "pyinformers_informer_object_errors_total",
            {"informer": "fake/v1/things", "stage": "transform"},
        )
        == 2
    )
    gate.set()
    eventually(lambda: reg.handled == 5)
    assert (
        registry.get_sample_value("pyinformers_informer_handler_notifications_total", labels) == 5
    )


# -- inline registrations: built-in enqueue handlers run on the informer thread -----------------
def test_a_handler_declaring_runs_inline_is_called_by_the_distributing_thread_in_order(handler_set):
    rec = Recorder()
    rec.runs_inline = True
    threads = []
    original = rec.on_update
    rec.on_update = lambda old, new: (
        threads.append(threading.current_thread().name),
        original(old, new),
    )
    handler_set.start()
    reg = register(handler_set, rec)
    with handler_set.lock:
        for i in range(5):
            handler_set.distribute((_UPDATE, i, i + 1))
        handler_set.distribute_initial("x")
        handler_set.distribute((_DELETE, "gone", None))
    # No thread and no buffer: every call already happened, on this thread, in order.
    assert rec.calls == [("update", i, i + 1) for i in range(5)] + [
        ("add", "x", True),
        ("delete", "gone"),
    ]
    assert threads == [threading.current_thread().name] * 5
    assert reg.backlog() == 0 and reg.handled == 7 and reg.has_synced()
    assert not any(t.name.startswith("pyinformers-handler-test") for t in threading.enumerate())


def test_an_inline_handler_that_raises_is_logged_and_skipped(handler_set, caplog):
    class Boom:
        runs_inline = True

        def on_add(self, obj, initial):
            raise RuntimeError("boom")

    reg = register(handler_set, Boom())
    with handler_set.lock:
        handler_set.distribute((_ADD, "a", False))
        handler_set.distribute((_ADD, "b", False))
    assert reg.errors == 2 and reg.handled == 2
    assert "event handler test-" in caplog.text


def test_only_built_in_enqueue_handlers_without_predicates_run_inline():
    from pyinformers.controller import EnqueueForObject, EnqueueForOwner, EnqueueMapped
    from pyinformers.workqueue import Queue

    q = Queue()
    assert EnqueueForObject().bind(q).runs_inline
    assert EnqueueForOwner("Deployment", owner_group="apps").bind(q).runs_inline
    assert (
        not EnqueueForObject().bind(q, [lambda event: True]).runs_inline
    )  # user predicates: own thread
    assert not EnqueueMapped(lambda obj: []).bind(q).runs_inline  # user mapping: own thread

    class Mine(EnqueueForObject):
        pass

    assert not Mine().bind(q).runs_inline  # a user subclass may do anything
    assert not getattr(Recorder(), "runs_inline", False)
