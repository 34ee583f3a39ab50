"""What an informer does with one object its own functions cannot handle.

A transform, the key function or an index function may raise for one object
(a field the code did not expect, an object the server sent without
``metadata``). That object must not stop the informer: every other object
keeps flowing. :class:`ObjectErrors` is where the DeltaFIFO and the Indexer
report such a failure. It counts it (per *stage*: ``transform``, ``key``,
``index``; exported as ``pyinformers_informer_object_errors``) and logs it,
naming the object by kind, namespace, name, uid and resourceVersion only
(:func:`~pyinformers.api.meta.describe`): an object's data never reaches the
log.

What happens to the object is decided where the error happens and stated in
the log line (see ``docs/operations.rst``):

* transform fails on an add or update: the object is left out of that
  change, so the cache keeps the version it had (none for a new object)
  until a later version transforms cleanly; on a relist the cached version
  is kept too (no false deletion);
* transform fails on a delete: the deletion still happens, with the last
  cached version (or the object as the server sent it);
* the key cannot be computed: the object is left out (it cannot be stored);
* an index function fails: the object is cached and found by key, but is
  missing from that one index.

Logging is throttled per stage: one line per :data:`LOG_INTERVAL` seconds,
the next one saying how many were not logged meanwhile. Counting is exact.

Thread-safety: :meth:`ObjectErrors.report` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pyinformers.api.meta import describe

__all__ = ["ObjectErrors", "LOG_INTERVAL", "one_line"]

log = logging.getLogger("pyinformers.cache._informer")  # the informer's own logger

#: Seconds between two log lines about failures of one stage (the count is always exact).
LOG_INTERVAL = 10.0


def one_line(error: BaseException) -> str:
    """``Type: message`` on one line, cut at 300 characters."""
    text = " ".join(str(error).split())
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ObjectErrors:
    """Per-stage counts of per-object failures of one informer, with throttled logging."""

    def __init__(
        self, informer_name: str, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._name = informer_name
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._last_logged: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}

    def report(self, stage: str, obj: Any, error: BaseException, consequence: str) -> None:
        """Count a failure of ``stage`` for ``obj`` and log it (throttled); never raises."""
        now = self._monotonic()
        with self._lock:
            self._counts[stage] = self._counts.get(stage, 0) + 1
            last = self._last_logged.get(stage)
            if last is not None and now - last < LOG_INTERVAL:
                self._unlogged[stage] = self._unlogged.get(stage, 0) + 1
                return
            self._last_logged[stage] = now
            skipped = self._unlogged.pop(stage, 0)
        more = (
            f" ({skipped} more {stage} failure(s) not logged since the last line)"
            if skipped
            else ""
        )
        log.warning(
            "informer %s: %s failed for %s (%s); %s%s",
            self._name,
            stage,
            describe(obj),
            one_line(error),
            consequence,
            more,
            exc_info=(type(error), error, error.__traceback__),
        )

    def counts(self) -> dict[str, int]:
        """``{stage: failures}`` since the informer was made."""
        with self._lock:
            return dict(self._counts)

    def __repr__(self) -> str:
        return f"<ObjectErrors {self._name!r} {self.counts()}>"
