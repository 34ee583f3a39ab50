"""Waiting in tests: :func:`eventually` and :class:`Convergence`.

A test of a controller acts, then waits for the world to catch up. Two tools,
both with a deadline (a test that waits without one hangs CI):

* :func:`eventually` -- call a condition until it returns something truthy
  (returned) or the timeout passes (``AssertionError`` naming what was awaited).
  It polls, backing off from 1 ms to 50 ms, so it costs little and notices
  quickly; use it for anything.
* :class:`Convergence` -- the same, woken by informers' events instead of a
  timer: for conditions over caches, in demos and long tests.

Both measure real time: with a :class:`~pyinformers.clock.FakeClock`, step the
clock first and then wait for the effect.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pyinformers.api import meta
from pyinformers.cache._processor import ResourceEventHandlerFuncs

__all__ = ["Convergence", "eventually"]

T = TypeVar("T")


def eventually(condition: Callable[[], T], timeout: float = 15.0, *, what: str | None = None) -> T:
    """Return ``condition()``'s first truthy value; ``AssertionError`` if none within ``timeout`` seconds.

    Exceptions from the condition propagate at once (a condition that can fail
    transiently should catch what it expects). ``what`` names the awaited state
    in the error (default: the condition's name).
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        value = condition()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            name = what or getattr(condition, "__name__", "condition")
            raise AssertionError(f"timed out after {timeout}s waiting for {name}")
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


class Convergence:
    """Wait until a condition over informer caches holds, woken by the informers' events.

    ``Convergence(informers)`` registers a handler on each informer that wakes
    waiters on every add, update and delete; :meth:`wait` re-evaluates its
    condition after each wake-up, so it returns as soon as the cache shows the
    awaited state, without polling. Call :meth:`close` to remove the handlers.

    The condition reads listers (the caches, as the controller sees them); it
    must not mutate cached objects. Thread-safe.
    """

    def __init__(self, informers: Iterable[Any]) -> None:
        self._cond = threading.Condition()
        self._generation = 0
        # (kind, namespace/name) -> resourceVersions seen in events, oldest first (bounded)
        self._seen: dict[tuple[str, str], collections.deque[str]] = {}

        def on_add(obj: Any, is_in_initial_list: bool = False) -> None:
            self._wake(obj)

        handlers = ResourceEventHandlerFuncs(
            on_add=on_add,
            on_update=lambda old, new: self._wake(new),
            on_delete=lambda obj: self._wake(None),
        )
        self._registrations = [informer.add_event_handler(handlers) for informer in informers]

    def _wake(self, obj: Any) -> None:
        with self._cond:
            if isinstance(obj, dict) and obj.get("metadata"):
                key = (str(obj.get("kind")), meta.object_key(obj))
                self._seen.setdefault(key, collections.deque(maxlen=256)).append(
                    meta.resource_version(obj) or ""
                )
            self._generation += 1
            self._cond.notify_all()

    def seen(self, kind: str, key: str, resource_version: str) -> bool:
        """True once an event carried object ``kind`` ``key`` at ``resource_version``.

        Lets a condition tell "the cache moved past my write" from "the cache
        has not seen my write yet" without comparing resourceVersions (opaque).
        """
        with self._cond:
            return resource_version in self._seen.get((kind, key), ())

    def wait(self, condition: Callable[[], Any], timeout: float) -> tuple[Any, float]:
        """Block until ``condition()`` is truthy or ``timeout`` elapses.

        Returns ``(value, elapsed_seconds)``: ``value`` is the last result of the
        condition (falsy on timeout). Re-checks at least every 0.5 s as well, in
        case the awaited state needs no event (e.g. it already held).
        """
        start = time.monotonic()
        deadline = start + timeout
        with self._cond:
            while True:
                seen = self._generation
                value = condition()
                now = time.monotonic()
                if value or now >= deadline:
                    return value, now - start
                if self._generation == seen:
                    self._cond.wait(min(deadline - now, 0.5))

    def close(self) -> None:
        """Remove the handlers from the informers. Idempotent."""
        registrations, self._registrations = self._registrations, []
        for registration in registrations:
            registration.remove()

    def __enter__(self) -> Convergence:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
