"""A scripted lister-watcher: drive a Reflector (or an informer) without a server.

:class:`ScriptedListerWatcher` implements
:class:`~pyinformers.api.ListerWatcher` from two queues the test fills: what
each ``list()`` returns (a :class:`~pyinformers.api.ListPage`, or an exception
to raise) and what each ``watch()`` returns (a :class:`ScriptedWatch`, or an
exception). It records every call, so a test can assert what was asked
(``resource_version``, ``limit``, ``continue_``...). :class:`ScriptedWatch` is
a watch stream that yields its events, then ends, raises ``error``, or (with
``block=True``) blocks like a quiet watch until it is closed.

Use it for unit tests of the reflector's rules on the fake clock.
:class:`FakeListerWatcher` is the other kind of double: an in-memory
collection whose changes the test makes while an informer watches it (no
script of calls, a live stream). Use :class:`~pyinformers.testing.ApiServer`
for anything that should go over HTTP.

Thread-safety: the queues are deques (appends and pops are atomic); a
:class:`ScriptedWatch` is iterated by one thread and fed or closed from any.
"""

from __future__ import annotations

import builtins
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from pyinformers.api import meta
from pyinformers.api._client import ListPage
from pyinformers.api._errors import Gone
from pyinformers.api._watch import WatchEvent
from pyinformers.cache.reflector._reflector import INITIAL_EVENTS_END_ANNOTATION

__all__ = ["FakeListerWatcher", "ScriptedListerWatcher", "ScriptedWatch"]


class ScriptedWatch:
    """A watch stream: ``events``, then the end, ``error`` raised, or (``block``) a wait for more or :meth:`close`.

    A blocking stream is live: :meth:`push` adds an event it then yields,
    :meth:`end` ends it as a server's timeout would, :meth:`fail` makes it
    raise (``Gone`` for a 410). A blocked stream that nobody closes, feeds or
    ends within 30 s fails the test's reflector with ``AssertionError``.
    """

    def __init__(
        self,
        events: Iterable[WatchEvent] = (),
        *,
        error: BaseException | None = None,
        block: bool = False,
    ) -> None:
        self.events = list(events)
        self.error = error
        self.block = block
        self.closed = threading.Event()
        #: set once the stream has yielded everything and blocks (``block=True``)
        self.blocking = threading.Event()
        self._cond = threading.Condition()
        # events not yet yielded, oldest first; guarded by _cond
        self._pending: deque[WatchEvent] = deque(self.events)
        self._ended = False  # guarded by _cond

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            with self._cond:
                if not self._cond.wait_for(self._ready, timeout=30):
                    raise AssertionError("a blocked ScriptedWatch was never closed")
                if self.closed.is_set():
                    return
                if self._pending:
                    event = self._pending.popleft()
                elif self.error is not None:
                    raise self.error
                else:
                    return
            yield event

    def _ready(self) -> bool:
        """True when the iterator can act: closed, an event, an error, or the end (held by _cond)."""
        if (
            self.closed.is_set()
            or self._pending
            or self.error is not None
            or self._ended
            or not self.block
        ):
            return True
        self.blocking.set()
        return False

    def push(self, event: WatchEvent) -> None:
        """Send ``event`` on the stream (after those still pending)."""
        with self._cond:
            self._pending.append(event)
            self._cond.notify_all()

    def end(self) -> None:
        """End the stream normally once its pending events are out (a server closing the watch)."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        """Raise ``error`` from the stream once its pending events are out."""
        with self._cond:
            self.error = error
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed.set()
            self._cond.notify_all()


Answer = ListPage | ScriptedWatch | BaseException


class ScriptedListerWatcher:
    """Answers ``list()`` and ``watch()`` from queues of scripted results; an exception in a queue is raised.

    An empty queue fails the call with ``AssertionError`` (the test did not
    script that far).

    A reflector lists it unless ``watch_list=True``: the first ``watch()``
    then is a streaming list (``send_initial_events=True``), and its script
    must end the initial events with a bookmark annotated
    ``k8s.io/initial-events-end`` (what :attr:`supports_watch_list` tells the
    reflector; client-go's fake clients opt out the same way).
    """

    def __init__(
        self,
        lists: Iterable[Answer] = (),
        watches: Iterable[Answer] = (),
        *,
        watch_list: bool = False,
    ) -> None:
        self.lists: deque[Answer] = deque(lists)
        self.watches: deque[Answer] = deque(watches)
        #: whether a reflector may sync with a streaming list (see the class doc)
        self.supports_watch_list = watch_list
        #: every call, in order: ``("list" | "watch", keyword arguments)``
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _answer(self, queue: deque[Answer], what: str, kwargs: dict[str, Any]) -> Any:
        self.calls.append((what, kwargs))
        if not queue:
            raise AssertionError(f"unscripted {what}({kwargs})")
        result = queue.popleft()
        if isinstance(result, BaseException):
            raise result
        return result

    def list(self, **kwargs: Any) -> ListPage:
        return self._answer(self.lists, "list", kwargs)

    def watch(self, **kwargs: Any) -> ScriptedWatch:
        return self._answer(self.watches, "watch", kwargs)

    def list_calls(self) -> builtins.list[dict[str, Any]]:
        return [kw for what, kw in self.calls if what == "list"]

    def watch_calls(self) -> builtins.list[dict[str, Any]]:
        return [kw for what, kw in self.calls if what == "watch"]


class FakeListerWatcher:
    """An in-memory collection: ``list()`` answers its objects, ``watch()`` a live stream of its changes.

    client-go's ``FakeControllerSource``: the test changes the collection with
    :meth:`add`, :meth:`modify` and :meth:`delete`; each change takes the next
    resourceVersion (one counter, like a server's) and is sent on every watch
    still open. :meth:`delete_unseen` changes it without an event (an object
    that vanished while no watch was open: the next relist finds it gone),
    :meth:`expire_watches` fails the open watches with 410 Gone (the reflector
    relists), :meth:`end_watches` ends them normally (it re-watches).

    ``objects`` maps keys to the stored objects; ``lists`` counts ``list()``
    calls; ``streams`` holds every watch opened, oldest first.

    A reflector lists it unless ``watch_list=True``: then a watch asked with
    ``send_initial_events`` first sends every stored object as ``ADDED`` and
    the bookmark annotated ``k8s.io/initial-events-end`` at the current
    resourceVersion, as kube-apiserver does.
    Thread-safe: one lock guards the collection and the streams.
    """

    def __init__(self, objects: Iterable[dict] = (), *, watch_list: bool = False) -> None:
        #: whether a reflector may sync with a streaming list (see the class doc)
        self.supports_watch_list = watch_list
        self._cond = threading.Condition()
        self.objects: dict[str, dict] = {meta.object_key(obj): obj for obj in objects}
        self.resource_version = (
            max((int(meta.resource_version(o) or 0) for o in self.objects.values()), default=0) + 1
        )
        self.lists = 0
        self.streams: builtins.list[ScriptedWatch] = []
        #: every call, in order: ``("list" | "watch", keyword arguments)``
        self.calls: builtins.list[tuple[str, dict[str, Any]]] = []

    def list(self, **kwargs: Any) -> ListPage:
        with self._cond:
            self.lists += 1
            self.calls.append(("list", kwargs))
            return ListPage(
                items=[dict(o) for o in self.objects.values()],
                resource_version=str(self.resource_version),
            )

    def watch(self, **kwargs: Any) -> ScriptedWatch:
        with self._cond:
            self.calls.append(("watch", kwargs))
            stream = ScriptedWatch(block=True)
            if self.supports_watch_list and kwargs.get("send_initial_events"):
                for obj in self.objects.values():
                    stream.push(WatchEvent("ADDED", dict(obj)))
                end = {
                    "resourceVersion": str(self.resource_version),
                    "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"},
                }
                stream.push(WatchEvent("BOOKMARK", {"metadata": end}))
            self.streams.append(stream)
            self._cond.notify_all()
            return stream

    def wait_for_watch(self, count: int = 1, timeout: float = 10.0) -> ScriptedWatch:
        """The ``count``-th watch opened, once it is (``AssertionError`` after ``timeout`` seconds)."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.streams) >= count, timeout=timeout):
                raise AssertionError(f"expected {count} watch(es), got {len(self.streams)}")
            return self.streams[count - 1]

    def add(self, obj: dict) -> dict:
        """Store ``obj`` at the next resourceVersion and send ``ADDED``; returns the stored copy."""
        return self._change("ADDED", obj)

    def modify(self, obj: dict) -> dict:
        """Replace the object at the next resourceVersion and send ``MODIFIED``."""
        return self._change("MODIFIED", obj)

    def delete(self, obj: dict) -> dict:
        """Remove the object and send ``DELETED`` carrying it at the next resourceVersion."""
        return self._change("DELETED", obj)

    def delete_unseen(self, obj: dict) -> None:
        """Remove the object without an event, as if deleted while no watch was open."""
        with self._cond:
            self.objects.pop(meta.object_key(obj), None)

    def expire_watches(self) -> None:
        """Fail every open watch with 410 Gone (the history it would resume from is compacted)."""
        for stream in self._open():
            stream.fail(Gone("too old resource version", reason="Expired"))

    def end_watches(self) -> None:
        """End every open watch normally (a server's watch timeout)."""
        for stream in self._open():
            stream.end()

    def _change(self, event_type: str, obj: dict) -> dict:
        with self._cond:
            self.resource_version += 1
            stored = dict(
                obj,
                metadata={**obj.get("metadata", {}), "resourceVersion": str(self.resource_version)},
            )
            key = meta.object_key(stored)
            if event_type == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = stored
            streams = [s for s in self.streams if not s.closed.is_set()]
        for stream in streams:
            stream.push(WatchEvent(event_type, dict(stored)))
        return stored

    def _open(self) -> builtins.list[ScriptedWatch]:
        with self._cond:
            return [s for s in self.streams if not s.closed.is_set()]
