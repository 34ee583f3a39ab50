"""pyinformers.record: Kubernetes Events about the objects a controller manages.

:class:`EventRecorder` writes ``core/v1`` Events asynchronously through a
bounded buffer and aggregates identical events into one Event with a growing
``count`` (client-go's ``tools/record``). :class:`EventSink` is the seam
tests replace.
"""

from pyinformers._exports import publish
from pyinformers.record._correlator import CorrelationKey, EventCorrelator, EventRecord
from pyinformers.record._recorder import EventRecorder, EventType, RecorderStats
from pyinformers.record._sink import EventSink, ResourceClientSink

__all__ = [
    "CorrelationKey",
    "EventCorrelator",
    "EventRecord",
    "EventRecorder",
    "EventSink",
    "EventType",
    "RecorderStats",
    "ResourceClientSink",
]

publish(globals(), __all__)
