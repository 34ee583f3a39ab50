""":class:`ReflectorOptions`: the tunables of a Reflector, validated where they are written.

Informers and the factory take one ``reflector_options`` value and hand it to
every Reflector they build, on a background thread. A misspelt or ill-typed
option must therefore fail when the options are *made* (in the caller's
thread, with a traceback that points at the mistake), never later on the
reflector's thread, where it would leave an informer that says "running" and
never syncs. Every field is checked in ``__post_init__``; a mapping given
instead of an instance is converted by :meth:`ReflectorOptions.of`, so an
unknown key fails the same way.

Values are immutable: share one instance between many informers freely.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ReflectorOptions", "DEFAULT_STALL_TIMEOUT", "DEFAULT_INITIAL_EVENTS_TIMEOUT"]

#: Seconds without any event (bookmarks included) after which a watch counts as stalled
#: and is re-opened from the last resourceVersion. Real servers bookmark an idle watch
#: about once a minute (the first one may take about 120 s), so 150 s rarely fires on a
#: healthy watch and recovers a stalled one within about two and a half minutes. A false
#: alarm costs one re-watch (see docs/operations.rst).
DEFAULT_STALL_TIMEOUT = 150.0

#: Seconds a streaming list may stay silent before its initial-events-end bookmark. A
#: server that streams lists sends the bookmark right after the last initial object (the
#: recorded kube-apiserver: at once), and it waits at most about 3 s for its watch cache to
#: be fresh before the first one; a server that ignores ``sendInitialEvents`` never sends
#: it. Past this silence the reflector lists instead (client-go warns at the same 10 s).
DEFAULT_INITIAL_EVENTS_TIMEOUT = 10.0


def _number(name: str, value: Any, *, minimum: float = 0.0, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"ReflectorOptions.{name} must be a number, got {value!r}")
    if value < minimum or (value == minimum and not allow_zero):
        bound = f">= {minimum}" if allow_zero else f"> {minimum}"
        raise ValueError(f"ReflectorOptions.{name} must be {bound}, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class ReflectorOptions:
    """How a Reflector lists, watches and retries (see :class:`~pyinformers.cache.reflector._reflector.Reflector`).

    :param page_size: items per list page (``limit``); 0 or None lists in one request.
    :param use_watch_list: sync with a streaming list (a watch with
        ``sendInitialEvents=true``; the default, as in client-go since 1.35):
        objects arrive one per event and are transformed as they are decoded,
        so a large collection never exists in full, managedFields included,
        at once. False syncs with a list (``resourceVersion=0``, which the API
        server answers in one response from its watch cache). A server that
        refuses or ignores streaming lists makes the reflector list instead.
    :param initial_events_timeout: seconds a streaming list may stay silent
        before the bookmark that ends its initial events; past that, the
        server is taken not to send it, and the reflector lists instead
        (default :data:`DEFAULT_INITIAL_EVENTS_TIMEOUT`, 10 s).
    :param min_watch_timeout: each watch asks the server to end it after a
        random number of seconds between this ...
    :param max_watch_timeout: ... and this (spreads reconnects).
    :param backoff_initial: first retry delay after a failure (seconds, jittered, doubling) ...
    :param backoff_max: ... up to this.
    :param stall_timeout: a watch with no event (bookmarks included) for this
        long is closed and re-opened from the last resourceVersion (default
        :data:`DEFAULT_STALL_TIMEOUT`, 150 s); None turns detection off and
        relies on the client's read timeout (server timeout + 60 s).
    :param on_watch_error: called on the reflector's thread with every list or
        watch error (it must not raise; if it does, the error is logged).
    """

    page_size: int | None = 500
    use_watch_list: bool = True
    initial_events_timeout: float = DEFAULT_INITIAL_EVENTS_TIMEOUT
    min_watch_timeout: float = 300
    max_watch_timeout: float = 600
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT
    on_watch_error: Callable[[BaseException], None] | None = None

    def __post_init__(self) -> None:
        if self.page_size is not None:
            if isinstance(self.page_size, bool) or not isinstance(self.page_size, int):
                raise TypeError(
                    f"ReflectorOptions.page_size must be an int or None, got {self.page_size!r}"
                )
            if self.page_size < 0:
                raise ValueError(f"ReflectorOptions.page_size must be >= 0, got {self.page_size}")
        if not isinstance(self.use_watch_list, bool):
            raise TypeError(
                f"ReflectorOptions.use_watch_list must be a bool, got {self.use_watch_list!r}"
            )
        _number("initial_events_timeout", self.initial_events_timeout)
        _number("min_watch_timeout", self.min_watch_timeout)
        _number("max_watch_timeout", self.max_watch_timeout)
        if self.min_watch_timeout > self.max_watch_timeout:
            raise ValueError(
                "need 0 < min_watch_timeout <= max_watch_timeout, "
                f"got {self.min_watch_timeout}, {self.max_watch_timeout}"
            )
        _number("backoff_initial", self.backoff_initial, allow_zero=True)
        _number("backoff_max", self.backoff_max, allow_zero=True)
        if self.backoff_initial > self.backoff_max:
            raise ValueError(
                f"need backoff_initial <= backoff_max, got {self.backoff_initial}, {self.backoff_max}"
            )
        if self.stall_timeout is not None:
            _number("stall_timeout", self.stall_timeout)
        if self.on_watch_error is not None and not callable(self.on_watch_error):
            raise TypeError(
                f"ReflectorOptions.on_watch_error must be callable, got {self.on_watch_error!r}"
            )

    @classmethod
    def of(cls, value: ReflectorOptions | Mapping[str, Any] | None) -> ReflectorOptions:
        """``value`` as options: an instance as is, a mapping by keyword (unknown keys fail), None the defaults."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            known = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(value) - known)
            if unknown:
                raise TypeError(
                    f"unknown reflector option(s) {', '.join(map(repr, unknown))}; "
                    f"the options are: {', '.join(sorted(known))}"
                )
            return cls(**value)
        raise TypeError(
            f"reflector_options must be a ReflectorOptions (or a mapping), got {value!r}"
        )

    def replace(self, **changes: Any) -> ReflectorOptions:
        """A copy with ``changes`` applied (validated like a new instance)."""
        return dataclasses.replace(self, **changes)

    def as_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments of :class:`~pyinformers.cache.reflector._reflector.Reflector`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
