"""Events on ``events.k8s.io/v1``, with ``core/v1`` kept for servers that do not serve it.

controller-runtime and client-go's ``tools/events`` write ``events.k8s.io/v1``
Events; ``core/v1`` Events are the legacy shape of the same objects (the API
server stores both in one place, and ``kubectl events`` reads either). The
two differ in field names and in how repetition is written:

=================================  =========================================
``core/v1``                        ``events.k8s.io/v1``
=================================  =========================================
``involvedObject``                 ``regarding``
``message``                        ``note``
``source.component``               ``reportingController``
``reportingInstance``              ``reportingInstance`` (required: the host)
``firstTimestamp`` (Time)          ``eventTime`` (MicroTime, required)
``count``, ``lastTimestamp``       ``series: {count, lastObservedTime}``
                                   (only from the second occurrence on)
(none)                             ``action`` (required: what was done)
=================================  =========================================

The recorder and its correlator work in ``core/v1`` terms (``count``,
``lastTimestamp``); :class:`EventsV1Sink` writes what they decide as
``events.k8s.io/v1``: the first occurrence creates the Event, a repeat
patches ``series`` only (the v1 API keeps every other field of an Event
immutable, so a combined Event keeps the note it was created with).

:class:`DiscoveringSink` asks the server once, on the first write (the
discovery endpoint every authenticated client may read), whether it serves
``events.k8s.io/v1``, and writes there if it does, to ``core/v1`` otherwise.

Called from the recorder's one writer thread; not thread-safe on its own.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from pyinformers.api import ResourceClient
from pyinformers.api.meta import format_micro_time, parse_time_seconds
from pyinformers.record._sink import ResourceClientSink
from pyinformers.resources import EVENTS_V1

__all__ = ["DiscoveringSink", "EventsV1Sink", "serves_events_v1", "to_events_v1"]

logger = logging.getLogger("pyinformers.record")

_MAX_FIELD = 128  # action, reportingController and reportingInstance are at most 128 characters


def serves_events_v1(api_client: Any) -> bool:
    """Whether the server behind ``api_client`` serves ``events.k8s.io/v1`` (one discovery request)."""
    import kubernetes

    groups = kubernetes.client.ApisApi(api_client).get_api_versions().groups or []
    return any(
        g.name == "events.k8s.io" and any(v.version == "v1" for v in g.versions or [])
        for g in groups
    )


def _micro(text: Any) -> str | None:
    seconds = parse_time_seconds(text) if isinstance(text, str) else None
    return None if seconds is None else format_micro_time(seconds)


def to_events_v1(event: dict, *, instance: str) -> dict:
    """The ``events.k8s.io/v1`` form of a ``core/v1`` Event body built by the recorder."""
    count = int(event.get("count") or 1)
    reason = str(event.get("reason") or "")
    body: dict[str, Any] = {
        "apiVersion": EVENTS_V1.api_version,
        "kind": "Event",
        "metadata": dict(event.get("metadata") or {}),
        "eventTime": _micro(event.get("firstTimestamp")),
        "regarding": dict(event.get("involvedObject") or {}),
        "reason": reason,
        "note": event.get("message", ""),
        "type": event.get("type"),
        "action": str(event.get("action") or reason)[:_MAX_FIELD],
        "reportingController": str((event.get("source") or {}).get("component") or "")[:_MAX_FIELD],
        "reportingInstance": (event.get("reportingInstance") or instance)[:_MAX_FIELD],
    }
    if count > 1:
        body["series"] = {"count": count, "lastObservedTime": _micro(event.get("lastTimestamp"))}
    return body


class EventsV1Sink:
    """An :class:`~pyinformers.record.EventSink` writing ``events.k8s.io/v1`` Events (see the module doc).

    ``instance`` is ``reportingInstance`` when the recorder has no host (default: this host's name).
    """

    def __init__(self, api_client: Any, *, instance: str | None = None) -> None:
        self._client: ResourceClient[Any] = ResourceClient(api_client, EVENTS_V1)
        self._instance = instance or socket.gethostname() or "unknown"

    def create(self, event: dict, namespace: str) -> dict:
        return self._client.create(
            to_events_v1(event, instance=self._instance), namespace=namespace
        )

    def patch(self, name: str, namespace: str, body: dict) -> dict:
        series = {
            "count": int(body.get("count") or 2),
            "lastObservedTime": _micro(body.get("lastTimestamp")),
        }
        return self._client.patch(name, {"series": series}, namespace=namespace, patch_type="merge")

    def __repr__(self) -> str:
        return f"<EventsV1Sink {self._client!r}>"


class DiscoveringSink:
    """Writes ``events.k8s.io/v1`` when the server serves it, else ``core/v1``; decided on the first write.

    ``api_version`` is the choice once made (None before). A discovery that
    fails (network, 5xx) raises from that write, which the recorder retries;
    the question is asked again then.
    """

    def __init__(self, api_client: Any, *, instance: str | None = None) -> None:
        self._api_client = api_client
        self._instance = instance
        self._sink: Any = None
        self.api_version: str | None = None

    def _chosen(self) -> Any:
        if self._sink is None:
            if serves_events_v1(self._api_client):
                self._sink, self.api_version = (
                    EventsV1Sink(self._api_client, instance=self._instance),
                    "events.k8s.io/v1",
                )
            else:
                self._sink, self.api_version = ResourceClientSink(self._api_client), "v1"
                logger.info(
                    "the API server does not serve events.k8s.io/v1: recording core/v1 Events"
                )
        return self._sink

    def create(self, event: dict, namespace: str) -> dict:
        return self._chosen().create(event, namespace)

    def patch(self, name: str, namespace: str, body: dict) -> dict:
        return self._chosen().patch(name, namespace, body)

    def __repr__(self) -> str:
        return f"<DiscoveringSink {self.api_version or 'undecided'}>"
