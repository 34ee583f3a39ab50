"""What a :class:`~pyinformers.cache.reflector.Reflector` knows about streaming lists.

A streaming list (``sendInitialEvents=true`` on a watch, with
``resourceVersionMatch=NotOlderThan``) syncs a collection without a list
request: the server sends the current objects as ``ADDED`` events, then a
``BOOKMARK`` annotated :data:`INITIAL_EVENTS_END_ANNOTATION`, whose
resourceVersion is the sync's; the same stream then goes on as a plain
watch. The reflector collects the initial events (transformed as they are
decoded), hands them to its store with one ``replace`` at the end bookmark,
and keeps consuming.

A server (or proxy) that does not stream lists shows it in one of two ways,
and this module tells them apart (:func:`rejects_watch_list`,
:func:`refuses_for_good`):

* it refuses the request: 400, 422 or 405 (an old server, a feature gate
  off) -- the reflector lists from then on;
* it ignores ``sendInitialEvents``: the events come without the end bookmark
  (a plain bookmark before it, silence, or the stream ends) -- the reflector
  reports :class:`StreamingListUnsupported` and lists for that sync only.

A 403 or 404 to a streaming list says nothing about streaming (a missing
permission, a missing CRD): the reflector lists for that sync, and the list
reports the error with its hint.

Thread-safety: everything here is a pure function or an immutable value.
"""

from __future__ import annotations

from typing import Any

from pyinformers.api.errors import ApiError, BadRequest, Forbidden, Invalid, MethodNotAllowed, NotFound

__all__ = [
    "INITIAL_EVENTS_END_ANNOTATION",
    "StreamingListUnsupported",
    "ends_initial_events",
    "rejects_watch_list",
    "refuses_for_good",
]

#: The annotation on the bookmark that ends the initial events of a streaming list.
INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


class StreamingListUnsupported(ConnectionError):
    """A streaming list whose initial events were never marked as ended (given to ``on_watch_error``).

    The reflector lists instead, for that sync only: a relist after 410
    streams again.
    """


def ends_initial_events(bookmark: Any) -> bool:
    """Whether a BOOKMARK event's object carries the ``k8s.io/initial-events-end: "true"`` annotation."""
    try:
        return bool(bookmark["metadata"]["annotations"][INITIAL_EVENTS_END_ANNOTATION] == "true")
    except (KeyError, TypeError):
        return False


def rejects_watch_list(error: ApiError) -> bool:
    """Whether an error refuses the streaming list itself (not a transient failure)."""
    return isinstance(error, (BadRequest, Invalid, Forbidden, NotFound, MethodNotAllowed))


def refuses_for_good(error: ApiError) -> bool:
    """Whether a refusal (:func:`rejects_watch_list`) means the server never streams lists.

    A 403 or 404 is about the caller or the resource, not about streaming:
    the next sync may stream again.
    """
    return not isinstance(error, (Forbidden, NotFound))
