"""EventRecorder against the in-process API server over HTTP: what lands in /api/v1/.../events."""

from __future__ import annotations

import pytest

from pyinformers.clock import FakeClock
from pyinformers.record import EventRecorder
from pyinformers.testing import ApiServer


@pytest.fixture
def server():
    with ApiServer() as srv:
        yield srv


@pytest.fixture
def client(server):
    c = server.api_client()
    yield c
    c.close()


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "default", "uid": "u-7"},
}


def test_events_are_created_then_aggregated_on_the_server(server, client):
    clock = FakeClock()
    with EventRecorder(client, "recorder-test", clock=clock) as recorder:
        recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container")
        assert recorder.flush(10)
        [event] = server.objects("events", namespace="default")
        assert event["count"] == 1 and event["type"] == "Warning"
        assert event["involvedObject"]["uid"] == "u-7"
        assert event["source"]["component"] == "recorder-test"
        clock.step(90)
        recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container")
        assert recorder.flush(10)
        [event] = server.objects("events", namespace="default")
        assert event["count"] == 2
        assert (event["firstTimestamp"], event["lastTimestamp"]) == (
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:01:30Z",
        )
        assert recorder.stats.written == 2 and recorder.stats.failed == 0


def test_an_event_whose_object_is_cluster_scoped_goes_to_default(server, client):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    with EventRecorder(client, "recorder-test") as recorder:
        recorder.eventf(node, "Normal", "Starting", "Starting kubelet %s", "v1.31")
        assert recorder.flush(10)
    [event] = server.objects("events", namespace="default")
    assert event["message"] == "Starting kubelet v1.31"
    assert event["metadata"]["name"].startswith("n1.")


def test_a_server_error_is_retried_until_the_event_is_written(server, client):
    clock = FakeClock()
    with EventRecorder(client, "recorder-test", clock=clock, retry_interval=1) as recorder:
        server.faults.error_rate = 1.0
        recorder.event(POD, "Normal", "Pulled", "image pulled")
        clock.block_until_timers(1)  # the first attempt failed; waiting to retry
        server.faults.reset()
        clock.step(1)
        assert recorder.flush(10)
    assert [e["reason"] for e in server.objects("events", namespace="default")] == ["Pulled"]
