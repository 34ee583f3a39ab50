"""How a Manager's controllers get to run once the caches synced: always, as the leader, or sharded.

A :class:`RunMode` is the one place that decides when the workers start and
which reconciles they may begin:

* :class:`RunAlways` starts the workers at once (no admission);
* :class:`~pyinformers.manager._leader.RunAsLeader` campaigns for a Lease
  and starts them on winning it, admitting reconciles only while it leads;
* :class:`~pyinformers.manager._sharding.RunSharded` joins a shard group and
  admits only the keys of the shards it holds.

The Manager builds one from its settings, calls :meth:`RunMode.start` once
its caches synced and :meth:`RunMode.stop` first in its own stop (before
the controllers drain: a leader drains, then releases its Lease; a shard
member stops admitting and hands its shards back), and adds the mode's
probe checks to its own. A mode reaches the controllers only through the
:class:`Crew` the Manager hands it.

Thread-safety: ``start`` runs on the thread that starts the Manager,
``stop`` on the one that stops it (at most once each); the checks from the
probe servers' threads, reading state the mode's own thread publishes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pyinformers.controller._controller import Controller

__all__ = ["Check", "Crew", "RunAlways", "RunMode"]

log = logging.getLogger("pyinformers.manager._manager")

#: One probe check: ``(name, ok, detail)``.
Check = tuple[str, bool, str]


@dataclass(frozen=True)
class Crew:
    """What a run mode may do with the Manager's controllers.

    :param controllers: the controllers, fixed once the Manager started.
    :param start: start their workers (returns early when a stop came first).
    :param drain: stop them, draining in-flight reconciles until a monotonic deadline.
    :param stopping: set once the Manager is asked to stop.
    :param shutdown_timeout: the drain's budget in seconds.
    :param registry: the Manager's metrics registry (None: no metrics).
    :param on_lost: called when the mode lost what let it run (noted on the Manager).
    """

    controllers: list[Controller]
    start: Callable[[list[Controller]], None]
    drain: Callable[[list[Controller], float], bool]
    stopping: threading.Event
    shutdown_timeout: float
    registry: Any
    on_lost: Callable[[], None]

    def lost(self, what: str, *, exit_process: bool) -> None:
        """``what`` (a lease) is lost: end the process with status 1, or ask the Manager to stop."""
        self.on_lost()
        if exit_process:
            log.critical("lost %s: exiting (status 1)", what)
            logging.shutdown()
            os._exit(1)
        log.error("lost %s: stopping the manager", what)
        self.stopping.set()


class RunMode(Protocol):
    """When the workers run and what they may reconcile (see the module docstring)."""

    def start(self, crew: Crew) -> None:
        """The caches synced: start the workers now, or arrange for them to start."""

    def stop(self, deadline: float) -> bool:
        """Stop admitting and hand back what the mode holds, by the monotonic ``deadline``; True when clean."""

    def health_checks(self) -> list[Check]:
        """The mode's part of ``/healthz``."""

    def ready_checks(self) -> list[Check]:
        """The mode's part of ``/readyz``."""

    def standby(self) -> bool:
        """True while the workers wait by design (a standby replica): ready, not failing."""


class RunAlways:
    """Start the workers as soon as the caches synced, and admit every reconcile."""

    def start(self, crew: Crew) -> None:
        crew.start(crew.controllers)

    def stop(self, deadline: float) -> bool:
        return True

    def health_checks(self) -> list[Check]:
        return []

    def ready_checks(self) -> list[Check]:
        return []

    def standby(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<RunAlways>"
