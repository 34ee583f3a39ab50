"""EventRecorder: validation, aggregation, buffering, retries and shutdown, on a fake sink."""

from __future__ import annotations

import logging
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyinformers.api._errors import AlreadyExists, Forbidden, NotFound, ServerError
from pyinformers.clock import FakeClock
from pyinformers.record import EventRecorder, EventType

FOO = {
    "apiVersion": "samplecontroller.k8s.io/v1alpha1",
    "kind": "Foo",
    "metadata": {
        "name": "example-foo",
        "namespace": "demo",
        "uid": "uid-1",
        "resourceVersion": "7",
    },
}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "uid-n"}}


class FakeSink:
    """An in-memory Events API: create/merge-patch with the server's error answers.

    ``gate`` (when set) makes every call wait until it is opened; ``errors`` is a
    list of exceptions the next calls raise, in order.
    """

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict] = {}
        self.calls: list[tuple[str, str, str]] = []  # (verb, namespace, name)
        self.errors: list[BaseException] = []
        self.gate: threading.Event | None = None
        self.entered = threading.Semaphore(0)
        self._lock = threading.Lock()

    def _enter(self, verb: str, namespace: str, name: str) -> None:
        self.entered.release()
        if self.gate is not None:
            assert self.gate.wait(10), "test gate never opened"
        with self._lock:
            self.calls.append((verb, namespace, name))
            if self.errors:
                raise self.errors.pop(0)

    def create(self, event: dict, namespace: str) -> dict:
        name = event["metadata"]["name"]
        self._enter("create", namespace, name)
        with self._lock:
            if (namespace, name) in self.events:
                raise AlreadyExists(
                    f"events {name!r} already exists", code=409, reason="AlreadyExists"
                )
            self.events[(namespace, name)] = dict(event)
            return event

    def patch(self, name: str, namespace: str, body: dict) -> dict:
        self._enter("patch", namespace, name)
        with self._lock:
            if (namespace, name) not in self.events:
                raise NotFound(f"events {name!r} not found", code=404, reason="NotFound")
            self.events[(namespace, name)].update(body)
            return self.events[(namespace, name)]

    def verbs(self) -> list[str]:
        return [verb for verb, _, _ in self.calls]


@pytest.fixture
def sink():
    return FakeSink()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def recorder(sink, clock):
    rec = EventRecorder(None, "sample-controller", host="node-a", clock=clock, sink=sink)
    yield rec
    rec.stop(timeout=5)


def only_event(sink: FakeSink) -> dict:
    assert len(sink.events) == 1, sink.events
    return next(iter(sink.events.values()))


def test_an_event_is_written_with_its_object_source_type_and_timestamps(recorder, sink):
    recorder.event(FOO, "Normal", "Synced", "Foo synced successfully")
    assert recorder.flush(5)
    event = only_event(sink)
    assert event["metadata"]["namespace"] == "demo"
    assert event["metadata"]["name"].startswith("example-foo.")
    int(event["metadata"]["name"].split(".", 1)[1], 16)  # hex suffix
    assert event["involvedObject"] == {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "name": "example-foo",
        "namespace": "demo",
        "uid": "uid-1",
        "resourceVersion": "7",
    }
    assert event["source"] == {"component": "sample-controller", "host": "node-a"}
    assert (event["type"], event["reason"], event["message"], event["count"]) == (
        "Normal",
        "Synced",
        "Foo synced successfully",
        1,
    )
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert recorder.stats.written == 1


def test_an_event_about_a_cluster_scoped_object_goes_to_the_default_namespace(recorder, sink):
    recorder.event(NODE, EventType.WARNING, "NotReady", "kubelet stopped posting status")
    assert recorder.flush(5)
    event = only_event(sink)
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert event["type"] == "Warning"


def test_identical_events_within_the_window_aggregate_into_one_event_with_a_growing_count(
    recorder, sink, clock
):
    recorder.event(FOO, "Warning", "ErrResourceExists", 'Resource "x" already exists')
    assert recorder.flush(5)
    clock.step(65)
    recorder.event(FOO, "Warning", "ErrResourceExists", 'Resource "x" already exists')
    assert recorder.flush(5)
    event = only_event(sink)
    assert event["count"] == 2
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-01-01T00:01:05Z"
    assert sink.verbs() == ["create", "patch"]
    assert recorder.stats.aggregated == 1


def test_events_that_differ_in_message_reason_or_type_are_separate(recorder, sink):
    recorder.event(FOO, "Normal", "Synced", "one")
    recorder.event(FOO, "Normal", "Synced", "two")
    recorder.event(FOO, "Normal", "Scaled", "one")
    recorder.event(FOO, "Warning", "Synced", "one")
    assert recorder.flush(5)
    assert len(sink.events) == 4
    assert {e["count"] for e in sink.events.values()} == {1}


def test_an_identical_event_after_the_window_starts_a_new_event(recorder, sink, clock):
    recorder.event(FOO, "Normal", "Synced", "ok")
    assert recorder.flush(5)
    clock.step(601)
    recorder.event(FOO, "Normal", "Synced", "ok")
    assert recorder.flush(5)
    assert len(sink.events) == 2
    assert sink.verbs() == ["create", "create"]


def test_a_burst_of_identical_events_costs_one_slot_and_one_write(recorder, sink):
    sink.gate = threading.Event()
    recorder.event(FOO, "Normal", "Synced", "first")  # the writer takes it and blocks
    assert sink.entered.acquire(timeout=5)
    for _ in range(50):
        recorder.event(FOO, "Warning", "Failed", "same failure")
    assert len(recorder) == 2  # one in flight, one buffered for the 50
    sink.gate.set()
    assert recorder.flush(5)
    assert sink.verbs() == ["create", "create"]
    failed = [e for e in sink.events.values() if e["reason"] == "Failed"]
    assert failed[0]["count"] == 50


def test_a_full_buffer_drops_new_events_with_one_rate_limited_warning(sink, clock, caplog):
    rec = EventRecorder(None, "busy", clock=clock, sink=sink, buffer_size=2)
    try:
        sink.gate = threading.Event()
        rec.event(FOO, "Normal", "R0", "m")
        assert sink.entered.acquire(timeout=5)  # R0 is in flight; the buffer is empty
        with caplog.at_level(logging.WARNING, logger="pyinformers.record"):
            for i in range(1, 6):
                rec.event(FOO, "Normal", f"R{i}", "m")  # R1, R2 fit; R3..R5 are dropped
        warnings = [r for r in caplog.records if "dropped" in r.getMessage()]
        assert len(warnings) == 1
        assert rec.stats.dropped == 3
        sink.gate.set()
        assert rec.flush(5)
        assert sorted(e["reason"] for e in sink.events.values()) == ["R0", "R1", "R2"]
        # a dropped event was forgotten: its next occurrence creates it, count 1
        rec.event(FOO, "Normal", "R3", "m")
        assert rec.flush(5)
        assert [e["count"] for e in sink.events.values() if e["reason"] == "R3"] == [1]
    finally:
        rec.stop(5)


@pytest.mark.parametrize(
    "args, match",
    [
        ((FOO, "Info", "Synced", "m"), "Normal' or 'Warning"),
        ((FOO, "Normal", "", "m"), "non-empty reason"),
        ((FOO, "Normal", "Synced", None), "message must be a string"),
        (({"kind": "Foo", "apiVersion": "v1"}, "Normal", "Synced", "m"), "metadata.name"),
        (({"metadata": {"name": "x"}}, "Normal", "Synced", "m"), "kind and apiVersion"),
        (("default/x", "Normal", "Synced", "m"), "as dicts"),
    ],
)
def test_bad_arguments_raise_value_error(recorder, sink, args, match):
    with pytest.raises(ValueError, match=match):
        recorder.event(*args)
    assert recorder.stats.recorded == 0


def test_eventf_formats_printf_style_and_rejects_a_bad_format(recorder, sink):
    recorder.eventf(
        FOO, "Warning", "ErrResourceExists", "Resource %r already exists (%d)", "web", 3
    )
    assert recorder.flush(5)
    assert only_event(sink)["message"] == "Resource 'web' already exists (3)"
    with pytest.raises(ValueError, match="cannot format"):
        recorder.eventf(FOO, "Normal", "Synced", "%d replicas", "many")


def test_network_errors_are_retried_after_the_retry_interval(recorder, sink, clock):
    sink.errors = [
        ConnectionResetError("reset by peer"),
        ServerError("etcd leader changed", code=503),
    ]
    recorder.event(FOO, "Normal", "Synced", "ok")
    clock.block_until_timers(1)
    assert sink.verbs() == ["create"]
    clock.step(10)
    clock.block_until_timers(1)
    clock.step(10)
    assert recorder.flush(5)
    assert sink.verbs() == ["create", "create", "create"]
    assert only_event(sink)["count"] == 1
    assert recorder.stats.written == 1 and recorder.stats.failed == 0


def test_a_rejected_event_is_given_up_without_retrying(recorder, sink):
    sink.errors = [Forbidden("events is forbidden", code=403, reason="Forbidden")]
    recorder.event(FOO, "Normal", "Synced", "ok")
    assert recorder.flush(5)
    assert sink.verbs() == ["create"]
    assert recorder.stats.failed == 1


def test_retries_stop_after_max_attempts(sink, clock):
    rec = EventRecorder(None, "flaky", clock=clock, sink=sink, max_attempts=2, retry_interval=1)
    try:
        sink.errors = [ConnectionError("down"), ConnectionError("still down")]
        rec.event(FOO, "Normal", "Synced", "ok")
        clock.block_until_timers(1)
        clock.step(1)
        assert rec.flush(5)
        assert rec.stats.failed == 1 and sink.events == {}
    finally:
        rec.stop(5)


def test_patching_an_event_that_expired_recreates_it(recorder, sink, clock):
    recorder.event(FOO, "Normal", "Synced", "ok")
    assert recorder.flush(5)
    sink.events.clear()  # the server's Event TTL passed
    clock.step(30)
    recorder.event(FOO, "Normal", "Synced", "ok")
    assert recorder.flush(5)
    assert sink.verbs() == ["create", "patch", "create"]
    assert only_event(sink)["count"] == 2


def test_close_writes_what_is_buffered_then_drops_new_events(sink, clock):
    rec = EventRecorder(None, "closing", clock=clock, sink=sink)
    for i in range(5):
        rec.event(FOO, "Normal", f"R{i}", "m")
    assert rec.stop(5)
    assert len(sink.events) == 5
    rec.event(FOO, "Normal", "Late", "m")  # no exception
    assert rec.stats.dropped == 1
    assert rec.stop(5)  # idempotent


def test_close_abandons_a_write_that_keeps_failing_within_its_timeout(sink, clock):
    rec = EventRecorder(None, "stuck", clock=clock, sink=sink)
    sink.errors = [ConnectionError("down")] * 20
    rec.event(FOO, "Normal", "Synced", "ok")
    clock.block_until_timers(1)  # retrying, waiting 10 fake seconds
    assert rec.stop(0.2) is False
    assert not any(t.name == "pyinformers-recorder-stuck" for t in threading.enumerate())


def test_event_names_are_unique_even_at_the_same_instant(recorder, sink):
    for i in range(20):
        recorder.event(FOO, "Normal", f"Reason{i}", "m")
    assert recorder.flush(5)
    assert len({name for _, name in sink.events}) == 20


def test_similar_events_past_max_similar_messages_are_combined_into_one_event(
    recorder, sink, clock
):
    for i in range(1, 16):
        recorder.event(FOO, "Normal", "ScalingReplicaSet", f"Scaled up to {i}")
        clock.step(1)
    recorder.event(FOO, "Normal", "OtherReason", "Scaled up to 99")  # another reason: its own group
    assert recorder.flush(5)
    messages = sorted(
        e["message"] for e in sink.events.values() if e["reason"] == "ScalingReplicaSet"
    )
    assert messages == sorted(
        [f"Scaled up to {i}" for i in range(1, 10)]
        + ["(combined from similar events): Scaled up to 15"]
    )
    combined = [e for e in sink.events.values() if e["message"].startswith("(combined")][0]
    assert combined["count"] == 6  # the 10th to the 15th
    assert [e["count"] for e in sink.events.values() if e["reason"] == "OtherReason"] == [1]


def test_similar_events_are_told_apart_again_after_the_window(recorder, sink, clock):
    for i in range(12):
        recorder.event(FOO, "Normal", "Scaled", f"to {i}")
    clock.step(601)
    recorder.event(FOO, "Normal", "Scaled", "to 100")
    assert recorder.flush(5)
    assert any(e["message"] == "to 100" for e in sink.events.values())


def test_many_threads_recording_at_once_lose_no_occurrence(recorder, sink):
    def record(thread: int) -> None:
        for i in range(200):
            recorder.event(FOO, "Normal", f"Reason{(thread + i) % 5}", "m")

    threads = [threading.Thread(target=record, args=(t,), name=f"hammer-{t}") for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert recorder.flush(10)
    assert len(sink.events) == 5
    assert sum(e["count"] for e in sink.events.values()) == 8 * 200
    assert recorder.stats.recorded == 8 * 200 and recorder.stats.dropped == 0


def test_repr_shows_state(recorder):
    assert "EventRecorder 'sample-controller' open pending=0" in repr(recorder)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([0, 1, 300, 700])),
        min_size=1,
        max_size=30,
    )
)
def test_counts_add_up_to_the_occurrences_and_each_window_is_one_event(steps):
    """Model: per key, a new Event starts when the gap since its last occurrence exceeds 600 s."""
    clock, sink = FakeClock(), FakeSink()
    rec = EventRecorder(None, "prop", clock=clock, sink=sink)
    try:
        expected: dict[str, list[int]] = {}  # key -> counts of its Events, oldest first
        last_seen: dict[str, float] = {}
        for reason, gap in steps:
            clock.step(gap)
            now = clock.now()
            if reason in last_seen and now - last_seen[reason] <= 600:
                expected[reason][-1] += 1
            else:
                expected.setdefault(reason, []).append(1)
            last_seen[reason] = now
            rec.event(FOO, "Normal", reason, "m")
            if gap:  # flush now and then, so both the in-buffer and the patch paths run
                assert rec.flush(5)
        assert rec.flush(5)
        actual: dict[str, list[int]] = {}
        for _, name in sorted(sink.events, key=lambda k: int(k[1].split(".")[1], 16)):
            event = sink.events[("demo", name)]
            actual.setdefault(event["reason"], []).append(event["count"])
        assert actual == expected
    finally:
        rec.stop(5)
