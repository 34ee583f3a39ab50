"""Who wants to hear of a write: the seam through which a controller learns what its reconcile wrote.

:class:`~pyinformers.api.ResourceClient` tells :func:`notify_write` of every
write the API server accepted (create, replace, replace_status, patch,
delete), with the object the server answered. Nothing listens by default.
A controller listens for the duration of one reconcile, on the worker's own
thread, with :func:`observing_writes`: the listener is held in a
``contextvars.ContextVar``, so a write made on another thread (or by a
reconcile of another controller) never reaches it.

This is what lets the controller remember the resourceVersion of each object
its reconcile wrote, through any client (the factory's, a declared one, one
the user built), without the user passing anything (see
:mod:`pyinformers.controller` on reading your own writes).

Cost when nothing listens: one ``ContextVar.get`` per write. A listener must
be quick and must not raise (an exception is logged and dropped: the write
itself succeeded).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["WriteListener", "end_observing", "notify_write", "observe_writes", "observing_writes"]

#: ``listener(resource, verb, answer)``: ``verb`` is ``create``, ``update``, ``patch`` or ``delete``;
#: ``answer`` what the server returned (the stored object, or a Status for some deletes).
WriteListener = Callable[[Any, str, Any], None]

_LISTENER: contextvars.ContextVar[WriteListener | None] = contextvars.ContextVar(
    "pyinformers_write_listener", default=None
)
_log = logging.getLogger("pyinformers.api")


def observe_writes(listener: WriteListener | None) -> contextvars.Token:
    """Start telling ``listener`` of this context's writes; pass the result to :func:`end_observing`."""
    return _LISTENER.set(listener)


def end_observing(token: contextvars.Token) -> None:
    """Undo the :func:`observe_writes` that returned ``token``."""
    _LISTENER.reset(token)


@contextmanager
def observing_writes(listener: WriteListener | None) -> Iterator[None]:
    """Within this block (and this thread's context), tell ``listener`` of every accepted write."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def notify_write(resource: Any, verb: str, answer: Any) -> None:
    """Tell the current listener, if any, that ``verb`` on ``resource`` was answered with ``answer``."""
    listener = _LISTENER.get()
    if listener is None:
        return
    try:
        listener(resource, verb, answer)
    except Exception:  # the write succeeded; a broken listener must not turn it into a failure
        _log.exception("a write listener failed on a %s of %s", verb, resource)
