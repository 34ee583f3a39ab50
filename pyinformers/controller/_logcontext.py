"""Which reconcile a log line belongs to: controller, key and a reconcile id, for structured logs.

A worker runs each ``reconcile(key)`` between :func:`enter` and :func:`leave`,
which set and reset a context variable;
:func:`reconcile_fields` reads it. The structured formatters
of :mod:`pyinformers.manager._operator` (``--log-format json`` or ``kv``) add the fields to
every record logged during a reconcile, whoever logs it (the controller's own
logger, the library, or the user's code), so the lines of one reconcile can be
grepped together by ``reconcile_id``.

Thread-safety: a context variable is per thread (each worker thread has its
own), so concurrent reconciles never see each other's fields.
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Any

__all__ = ["enter", "leave", "reconcile_fields"]

# (controller, key, reconcile number) of the reconcile running in this context, else None. A tuple,
# not the fields' dict: a worker sets it for every reconcile, and only logging reads it.
_current: contextvars.ContextVar[tuple[str, Any, int] | None] = contextvars.ContextVar(
    "pyinformers_reconcile", default=None
)
_ids = itertools.count(1)  # next() on a count is atomic in CPython


def enter(controller: str, key: Any) -> contextvars.Token[tuple[str, Any, int] | None]:
    """Mark the calling thread as reconciling ``key`` for ``controller`` until :func:`leave` with the token.

    The worker's hot path: one tuple and one context-variable set; the fields' dict is
    built only when :func:`reconcile_fields` asks.
    """
    return _current.set((controller, key, next(_ids)))


def leave(token: contextvars.Token[tuple[str, Any, int] | None]) -> None:
    """End the reconcile :func:`enter` marked (restores what was there before)."""
    _current.reset(token)


def reconcile_fields() -> dict[str, str]:
    """``{"controller", "key", "reconcile_id"}`` of the reconcile running on this thread, else ``{}``."""
    current = _current.get()
    if current is None:
        return {}
    controller, key, number = current
    return {"controller": controller, "key": str(key), "reconcile_id": f"{controller}-{number}"}
