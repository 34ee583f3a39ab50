"""What a :class:`~pyinformers.cache.reflector._reflector.Reflector` knows about streaming lists.

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

Permissions. kube-apiserver authorizes a streaming list as a ``watch`` (the
verb comes from ``watch=true`` alone; verified on 1.36: a ServiceAccount
with ``get`` and ``watch`` but no ``list`` syncs), so a missing ``list``
stays hidden until the first fallback to a list -- after a 410, or on a
server that refuses streaming lists -- which then fails with 403, hours
after the deployment. Before its first streaming list a reflector therefore
asks once (:func:`review_list_permission`: one SelfSubjectAccessReview per
reflector, never per relist or resync) and reports a missing ``list`` as a
:class:`~pyinformers.api._permissions.MissingPermission`.

The state of one streaming list, from the request to the end bookmark, is an
:class:`InitialEvents`: the objects collected so far, the timer that gives
up on a server that never ends them, and the GC pause while they arrive.

Thread-safety: the functions are pure (:func:`review_list_permission` makes
one request); an :class:`InitialEvents` belongs to the reflector's stepping
thread, its timer runs on the clock's timer thread and only closes the stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from pyinformers.api._errors import (
    ApiError,
    BadRequest,
    Forbidden,
    Invalid,
    MethodNotAllowed,
    NotFound,
)
from pyinformers.api._permissions import MissingPermission, review_access
from pyinformers.api._resource import Resource
from pyinformers.cache.reflector._timers import Closable, SilenceTimer
from pyinformers.clock import Clock

__all__ = [
    "INITIAL_EVENTS_END_ANNOTATION",
    "InitialEvents",
    "StreamingListUnsupported",
    "ends_initial_events",
    "rejects_watch_list",
    "refuses_for_good",
    "review_list_permission",
]

log = logging.getLogger("pyinformers.reflector")

#: The annotation on the bookmark that ends the initial events of a streaming list.
INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


class StreamingListUnsupported(ConnectionError):
    """A streaming list whose initial events were never marked as ended (given to ``on_watch_error``).

    The reflector lists instead, for that sync only: a relist after 410
    streams again.
    """


class InitialEvents:
    """One streaming list's initial events: collected by key until the end bookmark, then taken at once.

    :attr:`objects` maps keys to the objects received so far (transformed as
    decoded); the reflector's event loop writes it directly, so collecting
    costs no call per event. While the events arrive:

    * a :class:`~pyinformers.cache.reflector._timers.SilenceTimer` closes the
      stream after ``timeout`` seconds without a word before the end bookmark
      (:meth:`watch`): a server that ignores ``sendInitialEvents`` sends the
      current objects as ADDED events and then nothing that marks their end,
      and without the timer the cache would stay unsynced until the watch
      times out (minutes). Silence is measured from the last event, so a long
      stream that keeps coming is never cut; :attr:`silent` says it fired;
    * the cyclic garbage collector is paused (:meth:`pause_gc`): each object
      is decoded while the collection grows.

    Invariant: once :meth:`take` or :meth:`close` returned, the timer can no
    longer close the stream and the GC pause is over (:meth:`take` ends it
    after the store took the objects, see :meth:`end_gc_pause`).
    """

    __slots__ = ("objects", "_timer", "_gc_pause")

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}
        self._timer: SilenceTimer | None = None
        self._gc_pause: AbstractContextManager[Any] | None = None

    def watch(
        self,
        stream: Closable,
        clock: Clock,
        timeout: float,
        last_activity: Callable[[], float | None],
    ) -> None:
        """The stream is open: close it after ``timeout`` seconds of silence before the end bookmark."""
        self._timer = SilenceTimer(clock, timeout, stream, last_activity)
        self._timer.start()

    def pause_gc(self, pause: AbstractContextManager[Any]) -> None:
        """Hold ``pause`` (a :func:`~pyinformers._gc_policy.gc_paused`) until the objects are stored."""
        pause.__enter__()
        self._gc_pause = pause

    @property
    def silent(self) -> bool:
        """True when the timer closed the stream for silence."""
        return self._timer is not None and self._timer.fired

    def take(self) -> list[Any]:
        """The end bookmark: stop the timer and hand over the objects (the collection is emptied)."""
        self._cancel_timer()
        items = list(self.objects.values())
        self.objects.clear()
        return items

    def end_gc_pause(self) -> None:
        pause, self._gc_pause = self._gc_pause, None
        if pause is not None:
            pause.__exit__(None, None, None)

    def close(self) -> None:
        """The watch ended (or the objects are stored): no timer, no GC pause."""
        self._cancel_timer()
        self.end_gc_pause()

    def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()


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


def review_list_permission(lister_watcher: Any) -> MissingPermission | None:
    """A :class:`MissingPermission` if the server says this client may not list what it streams, else None.

    ``lister_watcher`` is a :class:`~pyinformers.api._listwatch.ListWatch`
    (its client, resource, namespace and selectors say what a list would
    ask); for anything else (a test's scripted fake) nothing is asked. None
    too when the server cannot answer (it does not serve the review, refuses
    it, or fails): the check is advice, the sync goes on either way.
    """
    client = getattr(lister_watcher, "client", None)
    resource = getattr(client, "resource", None)
    api_client = getattr(client, "api_client", None)
    if not isinstance(resource, Resource) or api_client is None:
        return None
    namespace = getattr(lister_watcher, "namespace", None)
    try:
        allowed = review_access(
            api_client,
            resource,
            "list",
            namespace,
            label_selector=getattr(lister_watcher, "label_selector", None) or None,
            field_selector=getattr(lister_watcher, "field_selector", None) or None,
        )
    except Exception as error:  # the review is advice: never a reason to fail the sync
        log.debug("could not review the list permission on %s: %s", resource, error)
        return None
    if allowed is not False:
        return None
    return MissingPermission(
        resource,
        "list",
        namespace,
        why=(
            'the streaming list only needs "watch", so the cache syncs, but a fallback to a list '
            "(after 410 Gone, or when a server refuses streaming lists) will be refused"
        ),
    )
