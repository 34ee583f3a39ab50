"""pyinformers.record: Kubernetes Events about the objects a controller manages.

:class:`EventRecorder` writes ``core/v1`` Events asynchronously through a
bounded buffer and aggregates identical events into one Event with a growing
``count`` (client-go's ``tools/record``); with ``events_api="events.k8s.io/v1"``
(:class:`EventsV1Sink`) or ``"auto"`` (:class:`DiscoveringSink`) it writes
``events.k8s.io/v1`` Events, repeats as a ``series``. :class:`EventSink` is
the seam tests replace.
"""

from pyinformers._exports import publish
from pyinformers.record._correlator import CorrelationKey, EventCorrelator, EventRecord
from pyinformers.record._events_v1 import DiscoveringSink, EventsV1Sink
from pyinformers.record._recorder import EventRecorder, EventType, RecorderStats
from pyinformers.record._sink import EventSink, ResourceClientSink

__all__ = [
    "CorrelationKey",
    "DiscoveringSink",
    "EventsV1Sink",
    "EventCorrelator",
    "EventRecord",
    "EventRecorder",
    "EventSink",
    "EventType",
    "RecorderStats",
    "ResourceClientSink",
]

publish(globals(), __all__)
