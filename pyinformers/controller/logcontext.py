"""Which reconcile a log line belongs to: controller, key and a reconcile id, for structured logs.

A worker runs each ``reconcile(key)`` between :func:`enter` and :func:`leave`
(or inside :func:`reconciling`), which set a context variable;
:func:`reconcile_fields` reads it. The structured formatters
of :mod:`pyinformers.cli` (``--log-format json`` or ``kv``) add the fields to
every record logged during a reconcile, whoever logs it (the controller's own
logger, the library, or the user's code), so the lines of one reconcile can be
grepped together by ``reconcile_id``.

Thread-safety: a context variable is per thread (each worker thread has its
own), so concurrent reconciles never see each other's fields.
"""

from __future__ import annotations

import contextvars
import itertools
from contextlib import contextmanager
from typing import Any, Iterator, Optional

__all__ = ["enter", "leave", "reconcile_fields", "reconciling"]

# (controller, key, reconcile number) of the reconcile running in this context, else None. A tuple,
# not the fields' dict: a worker sets it for every reconcile, and only logging reads it.
_current: contextvars.ContextVar[Optional[tuple[str, Any, int]]] = contextvars.ContextVar(
    "pyinformers_reconcile", default=None
)
_ids = itertools.count(1)  # next() on a count is atomic in CPython


def enter(controller: str, key: Any) -> contextvars.Token[Optional[tuple[str, Any, int]]]:
    """Mark the calling thread as reconciling ``key`` for ``controller`` until :func:`leave` with the token.

    The worker's hot path: one tuple and one context-variable set, about a tenth of a
    ``with reconciling(...)`` block.
    """
    return _current.set((controller, key, next(_ids)))


def leave(token: contextvars.Token[Optional[tuple[str, Any, int]]]) -> None:
    """End the reconcile :func:`enter` marked (restores what was there before)."""
    _current.reset(token)


@contextmanager
def reconciling(controller: str, key: Any) -> Iterator[dict[str, str]]:
    """Mark the calling thread as reconciling ``key`` for ``controller``; yields the fields."""
    token = enter(controller, key)
    try:
        yield reconcile_fields()
    finally:
        leave(token)


def reconcile_fields() -> dict[str, str]:
    """``{"controller", "key", "reconcile_id"}`` of the reconcile running on this thread, else ``{}``."""
    current = _current.get()
    if current is None:
        return {}
    controller, key, number = current
    return {"controller": controller, "key": str(key), "reconcile_id": f"{controller}-{number}"}
