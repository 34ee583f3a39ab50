"""pyinformers.cache.reflector: list and watch one resource into a store.

The reflector is an explicit state machine (``_states``: NeedList, Listing,
WatchListing, Watching, BackingOff, Stopped) advanced by one ``step()`` that
tests drive without threads; ``run()`` is a thin loop around it. Its rooms:
``_reflector`` (the machine), ``_options`` (:class:`ReflectorOptions`),
``_watchlist`` (streaming lists), ``_timers`` (resync, silence, stop polls),
``_errors`` and ``_metrics``. See docs/informers.rst.
"""

from pyinformers._exports import publish
from pyinformers.cache.reflector._options import ReflectorOptions
from pyinformers.cache.reflector._reflector import Reflector
from pyinformers.cache.reflector._states import ReflectorStats
from pyinformers.cache.reflector._watchlist import StreamingListUnsupported

__all__ = ["Reflector", "ReflectorOptions", "ReflectorStats", "StreamingListUnsupported"]

publish(globals(), __all__)
