"""``StepRunner``: drive a steppable state machine on a thread, sleeping on the clock between steps.

The elector and the shard coordinator are both written as ``step() -> delay``
(seconds until the next step is due, or None when done). This is the one loop
that runs such a machine: step, wait ``delay`` on the injected clock (woken
early by :meth:`StepRunner.halt`), repeat until the machine says it is done
or someone halts it.

Threading: :meth:`start` spawns one daemon thread; :meth:`halt` and
:meth:`join` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyinformers.clock import Clock

__all__ = ["StepRunner"]

log = logging.getLogger("pyinformers.leaderelection")


class StepRunner:
    """Run ``step`` until it returns None or :meth:`halt` is called; ``on_crash`` if it raises."""

    def __init__(
        self,
        step: Callable[[], float | None],
        clock: Clock,
        *,
        thread_name: str,
        on_crash: Callable[[], None] | None = None,
    ) -> None:
        self._step = step
        self._clock = clock
        self._thread_name = thread_name
        self._on_crash = on_crash
        self._wake = threading.Condition(threading.Lock())
        self._halted = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def halted(self) -> bool:
        return self._halted.is_set()

    def run(self) -> None:
        """The loop, on the calling thread."""
        try:
            while not self._halted.is_set():
                delay = self._step()
                if delay is None:
                    return
                with self._wake:
                    if not self._halted.is_set():
                        self._clock.wait(self._wake, max(delay, 0.001))
        except Exception:
            log.exception("%s failed", self._thread_name)
            if self._on_crash is not None:
                self._on_crash()

    def start(self) -> threading.Thread:
        if self._thread is not None:
            raise RuntimeError(f"{self._thread_name} runs once")
        self._thread = threading.Thread(target=self.run, name=self._thread_name, daemon=True)
        self._thread.start()
        return self._thread

    def halt(self) -> None:
        """No further step starts; a wait between steps ends now (a step in progress completes)."""
        self._halted.set()
        with self._wake:
            self._wake.notify_all()

    def join(self, timeout: float) -> bool:
        """Wait for the thread (not from itself); True when it ended or never started."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()
