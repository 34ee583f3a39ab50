"""A scripted lister-watcher: drive a Reflector (or an informer) without a server.

:class:`ScriptedListerWatcher` implements
:class:`~pyinformers.api.ListerWatcher` from two queues the test fills: what
each ``list()`` returns (a :class:`~pyinformers.api.ListPage`, or an exception
to raise) and what each ``watch()`` returns (a :class:`ScriptedWatch`, or an
exception). It records every call, so a test can assert what was asked
(``resource_version``, ``limit``, ``continue_``...). :class:`ScriptedWatch` is
a watch stream that yields its events, then ends, raises ``error``, or (with
``block=True``) blocks like a quiet watch until it is closed.

Use it for unit tests of the reflector's rules on the fake clock; use
:class:`~pyinformers.testing.ApiServer` for anything that should go over HTTP.

Thread-safety: the queues are deques (appends and pops are atomic); a
:class:`ScriptedWatch` is iterated by one thread and closed from any.
"""

from __future__ import annotations

import builtins
import threading
from collections import deque
from typing import Any, Iterable, Iterator, Optional, Union

from pyinformers.api.client import ListPage
from pyinformers.api.watch import WatchEvent

__all__ = ["ScriptedListerWatcher", "ScriptedWatch"]


class ScriptedWatch:
    """A watch stream: ``events``, then the end, ``error`` raised, or (``block``) a wait for :meth:`close`."""

    def __init__(
        self, events: Iterable[WatchEvent] = (), *, error: Optional[BaseException] = None, block: bool = False
    ) -> None:
        self.events = list(events)
        self.error = error
        self.block = block
        self.closed = threading.Event()
        #: set once the stream has yielded everything and blocks (``block=True``)
        self.blocking = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self.events:
            if self.closed.is_set():
                return
            yield event
        if self.error is not None:
            raise self.error
        if self.block:
            self.blocking.set()
            if not self.closed.wait(30):
                raise AssertionError("a blocked ScriptedWatch was never closed")

    def close(self) -> None:
        self.closed.set()


Answer = Union[ListPage, ScriptedWatch, BaseException]


class ScriptedListerWatcher:
    """Answers ``list()`` and ``watch()`` from queues of scripted results; an exception in a queue is raised.

    An empty queue fails the call with ``AssertionError`` (the test did not
    script that far).
    """

    def __init__(self, lists: Iterable[Answer] = (), watches: Iterable[Answer] = ()) -> None:
        self.lists: deque[Answer] = deque(lists)
        self.watches: deque[Answer] = deque(watches)
        #: every call, in order: ``("list" | "watch", keyword arguments)``
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _answer(self, queue: "deque[Answer]", what: str, kwargs: dict[str, Any]) -> Any:
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
