"""The events.k8s.io/v1 form of the recorder's Events, without a server."""

from __future__ import annotations

from pyinformers.record._events_v1 import EventsV1Sink, to_events_v1


def test_the_core_v1_form_translates_field_by_field():
    core = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "cfg.1", "namespace": "ns"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "cfg",
            "namespace": "ns",
        },
        "reason": "Synced",
        "message": "ok",
        "type": "Normal",
        "source": {"component": "c"},
        "count": 1,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "reportingComponent": "c",
        "reportingInstance": "",
    }
    v1 = to_events_v1(core, instance="host-a")
    assert v1["apiVersion"] == "events.k8s.io/v1" and v1["regarding"] == core["involvedObject"]
    assert v1["eventTime"] == "2026-01-01T00:00:00.000000Z" and "series" not in v1
    assert (v1["reportingController"], v1["reportingInstance"], v1["note"]) == ("c", "host-a", "ok")


def test_the_events_v1_sink_patches_only_the_series():
    sent = []

    class Client:
        def patch(self, name, body, namespace=None, patch_type=None):
            sent.append(body)
            return body

    sink = EventsV1Sink.__new__(EventsV1Sink)
    sink._client, sink._instance = Client(), "h"
    sink.patch(
        "cfg.1", "ns", {"count": 4, "lastTimestamp": "2026-01-01T00:01:00Z", "message": "changed"}
    )
    assert sent == [{"series": {"count": 4, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}}]
