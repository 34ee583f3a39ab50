"""Events on events.k8s.io/v1 through the recorder, aggregated into a series, on either server."""

from __future__ import annotations

import pytest

from pyinformers.api import ResourceClient
from pyinformers.record import EventRecorder
from pyinformers.record._events_v1 import DiscoveringSink, serves_events_v1
from pyinformers.resources import CONFIGMAPS, EVENTS_V1

pytestmark = pytest.mark.timeout(120)


def test_the_server_serves_events_v1_and_the_discovering_sink_chooses_it(k8s):
    assert serves_events_v1(k8s.api_client())


def test_a_recorder_asked_for_events_v1_writes_there(k8s):
    api_client = k8s.api_client()
    ns = k8s.namespace
    cm = ResourceClient(api_client, CONFIGMAPS).create(
        {"metadata": {"name": "cfg", "namespace": ns}}
    )
    recorder = EventRecorder(
        api_client, "porter-controller", host="h1", events_api="events.k8s.io/v1"
    )
    try:
        recorder.event(cm, "Normal", "Synced", "ok")
        assert recorder.flush(30)
    finally:
        recorder.stop(5)
    (event,) = [
        e for e in ResourceClient(api_client, EVENTS_V1).list(ns).items if e["reason"] == "Synced"
    ]
    assert (event["note"], event["reportingInstance"]) == ("ok", "h1")


def test_an_unknown_events_api_is_refused():
    with pytest.raises(ValueError, match="events_api must be"):
        EventRecorder(object(), "c", events_api="events/v2")


def test_a_repeated_event_is_one_events_v1_event_with_a_series(k8s):
    api_client = k8s.api_client()
    ns = k8s.namespace
    cm = ResourceClient(api_client, CONFIGMAPS).create(
        {"metadata": {"name": "cfg", "namespace": ns}}
    )
    sink = DiscoveringSink(api_client, instance="replica-1")
    recorder = EventRecorder(None, "porter-controller", sink=sink)
    try:
        for _ in range(3):
            recorder.event(cm, "Warning", "SyncFailed", "the backend said no")
        recorder.event(cm, "Normal", "Synced", "all good")
        assert recorder.flush(30)
    finally:
        recorder.stop(5)
    assert sink.api_version == "events.k8s.io/v1"
    events = ResourceClient(api_client, EVENTS_V1).list(ns).items
    by_reason = {e["reason"]: e for e in events if e["regarding"].get("name") == "cfg"}
    failed, synced = by_reason["SyncFailed"], by_reason["Synced"]
    assert failed["note"] == "the backend said no" and failed["type"] == "Warning"
    assert (
        failed["reportingController"] == "porter-controller"
        and failed["reportingInstance"] == "replica-1"
    )
    assert failed["action"] == "SyncFailed"
    assert failed["regarding"]["uid"] == cm["metadata"]["uid"]
    assert failed["series"]["count"] == 3 and failed["series"]["lastObservedTime"].endswith("Z")
    assert "series" not in synced or synced["series"] is None
    assert len(failed["eventTime"]) == len("2026-01-01T00:00:00.000000Z")
