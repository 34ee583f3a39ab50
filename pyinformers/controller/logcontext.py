"""Which reconcile a log line belongs to: controller, key and a reconcile id, for structured logs.

A worker runs each ``reconcile(key)`` inside :func:`reconciling`, which sets a
context variable; :func:`reconcile_fields` reads it. The structured formatters
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

__all__ = ["reconcile_fields", "reconciling"]

_current: contextvars.ContextVar[Optional[dict[str, str]]] = contextvars.ContextVar(
    "pyinformers_reconcile", default=None
)
_ids = itertools.count(1)  # next() on a count is atomic in CPython


@contextmanager
def reconciling(controller: str, key: Any) -> Iterator[dict[str, str]]:
    """Mark the calling thread as reconciling ``key`` for ``controller``; yields the fields."""
    fields = {"controller": controller, "key": str(key), "reconcile_id": f"{controller}-{next(_ids)}"}
    token = _current.set(fields)
    try:
        yield fields
    finally:
        _current.reset(token)


def reconcile_fields() -> dict[str, str]:
    """``{"controller", "key", "reconcile_id"}`` of the reconcile running on this thread, else ``{}``."""
    return dict(_current.get() or {})
