"""The lifecycle the in-process server's background controllers share.

The garbage collector (:mod:`.gc`) and the workload simulator
(:mod:`.workloads`) each listen to the store (quickly, under the store's
lock: they only queue work) and do the work on one daemon thread of their
own, woken through ``_cond``. This base class owns that thread: ``start``,
and a ``stop`` that wakes it, joins it and stops listening.

Subclasses implement ``_on_change(change)`` (called under the store lock:
queue, never write) and ``_run()`` (the thread's loop, which returns once
``_stopped`` is set; read it under ``_cond``).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["StoreListenerThread"]


class StoreListenerThread:
    """A store listener with one worker thread named ``thread_name``. Thread-safe."""

    def __init__(self, rest: Any, *, thread_name: str) -> None:
        self._rest = rest
        self._thread_name = thread_name
        self._cond = threading.Condition(threading.Lock())
        self._stopped = False  # guarded by _cond; once True, _run returns
        self._thread: threading.Thread | None = None
        rest.store.add_listener(self._on_change)

    def _on_change(self, change: Any) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        self._rest.store.remove_listener(self._on_change)
