"""Shutdown on SIGTERM / SIGINT: the first signal asks for a graceful stop, a second exits at once.

Used by :meth:`~pyinformers.manager._manager.Manager.run`. Internal module.

Threading: Python delivers signals to the main thread only, so
:func:`install_shutdown_handlers` installs handlers only when called from it
(elsewhere it does nothing and returns a no-op restore function).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["install_shutdown_handlers"]

log = logging.getLogger("pyinformers.manager._manager")


def install_shutdown_handlers(request_stop: Callable[[], None]) -> Callable[[], None]:
    """On SIGTERM or SIGINT call ``request_stop()``; on a second signal ``os._exit(1)``.

    Returns a function that restores the previous handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        log.debug("run() outside the main thread: no signal handlers installed")
        return lambda: None
    previous = {}
    received = 0

    def handle(signum: int, frame: Any) -> None:
        nonlocal received
        received += 1
        name = signal.Signals(signum).name
        if received > 1:
            log.warning("second %s: exiting now", name)
            os._exit(1)
        log.info("%s received: shutting down (send it again to exit at once)", name)
        request_stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handle)

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore
