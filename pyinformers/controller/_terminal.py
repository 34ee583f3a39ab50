"""How a reconcile's exception is treated: terminal, expected, or a failure to show in full.

* :class:`TerminalError` -- raise it (``raise TerminalError("spec.schedule
  is not a cron expression") from err``) when retrying cannot help: the
  controller logs it once at ERROR, counts it in
  ``controller_runtime_terminal_reconcile_errors_total`` (and as an error),
  and forgets the key instead of retrying it. The next change to the object
  enqueues it again, as controller-runtime's ``reconcile.TerminalError`` does.
* *expected* errors -- the races every controller meets: a ``Conflict``
  (someone wrote first; the cache was stale), a ``NotFound`` (the object
  went while we worked on it), an ``AlreadyExists`` (the cache had not seen
  our create yet), an object being deleted. Retried with backoff like any
  error, but logged in one INFO line with the key and the reason (the
  traceback at DEBUG), as logr prints them, instead of 30 lines at ERROR.
* anything else keeps its traceback at ERROR.

Pure functions and a value type; thread-safe.
"""

from __future__ import annotations

from pyinformers.api import AlreadyExists, ApiError, Conflict, NotFound
from pyinformers.controller._objects import ObjectBeingDeleted

__all__ = ["TerminalError", "brief", "expected_reason"]


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix: logged once, counted, not retried.

    Wrap the cause with ``raise TerminalError("what is wrong") from cause``;
    the message is what the log line says.
    """


def expected_reason(error: BaseException) -> str | None:
    """The short reason of an expected race (``"Conflict"``, ``"NotFound"`` ...), or None.

    ``ObjectBeingDeleted`` (from create_or_update / create_or_patch) is
    expected too, with reason ``"BeingDeleted"``.
    """
    if isinstance(error, AlreadyExists):
        return "AlreadyExists"
    if isinstance(error, Conflict):
        return "Conflict"
    if isinstance(error, NotFound):
        return "NotFound"
    if isinstance(error, ObjectBeingDeleted):
        return "BeingDeleted"
    return None


def brief(error: BaseException) -> str:
    """The error's message on one line (an API error's own ``(409 Conflict) ...`` form)."""
    text = str(error) if isinstance(error, ApiError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())
