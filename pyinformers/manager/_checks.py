"""What the Manager's probes check: ``/healthz`` (alive) and ``/readyz`` (ready for work).

A check is ``(name, ok, detail)``. Health fails when an informer is
unhealthy (one of its threads ended unexpectedly, or its reflector keeps
failing; the detail says which and why) or a controller lost a worker
thread; readiness fails until every cache has synced and every controller
runs, and again while shutting down. A cache that has not synced says why
when it knows (its reflector's last error, e.g. a 404 for a custom resource
whose CRD is not installed). Internal module: the :class:`~pyinformers.manager._manager.Manager`
exposes these as :meth:`~pyinformers.manager._manager.Manager.health_checks`
and :meth:`~pyinformers.manager._manager.Manager.ready_checks`.

Threading: pure functions over thread-safe reads of informers and controllers;
the probe server calls them from its request threads.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from pyinformers.controller._controller import Controller

__all__ = ["Check", "health_checks", "ready_checks"]

#: ``(name, ok, detail)``: one line of a probe's verbose answer.
Check = tuple[str, bool, str]


def _by_name(informers: Mapping[Any, Any]) -> list[Any]:
    return [informer for _key, informer in sorted(informers.items(), key=lambda kv: kv[1].name)]


def health_checks(
    informers: Mapping[Any, Any],
    controllers: Iterable[Controller],
    *,
    started: bool,
    stall_timeout: float | None = None,
    fail_on_stall: bool = True,
) -> list[Check]:
    """``/healthz``: informers' reflectors, their handlers' progress, controllers' workers.

    ``informers`` is the factory's ``{(resource, namespace): informer}``; an
    informer that is not running fails only once the manager ``started``. A
    handler with a backlog that finished nothing for ``stall_timeout``
    seconds is a check of its own, failing when ``fail_on_stall``.
    """
    checks = []
    now = time.monotonic()
    for informer in _by_name(informers):
        problem = informer.health_problem()
        if problem == "not running":
            checks.append((f"informer {informer.name}", not started, problem))
            continue
        checks.append((f"informer {informer.name}", not problem, problem))
        if stall_timeout is None:
            continue
        for registration in informer.registrations():
            stalled = registration.stalled_for(now)
            if stalled >= stall_timeout:
                handler = repr(registration.handler)
                handler = handler if len(handler) <= 80 else handler[:77] + "..."
                checks.append(
                    (
                        f"handler {registration.name}",
                        not fail_on_stall,
                        f"stalled: {registration.backlog()} notification(s) waiting, none finished "
                        f"for {stalled:.0f} s ({handler})",
                    )
                )
    for controller in controllers:
        ok = controller.healthy()
        detail = "" if ok else f"{controller.workers_alive()}/{controller.workers} workers alive"
        checks.append((f"controller {controller.name}", ok, detail))
    return checks


def _memory(informer: Any) -> str:
    """``48,211 objects, about 310 MB`` for a synced informer that estimates its cache ("" otherwise)."""
    estimate = getattr(informer, "memory_estimate", None)
    if estimate is None:
        return ""
    try:
        return str(estimate())
    except Exception:  # a probe answers whatever an estimate does
        return ""


def ready_checks(
    informers: Mapping[Any, Any], controllers: Iterable[Controller], *, stopping: bool
) -> list[Check]:
    """``/readyz``: caches synced, controllers running, not ``stopping``."""
    checks = []
    for informer in _by_name(informers):
        problem = informer.sync_problem()
        checks.append((f"informer {informer.name}", not problem, problem or _memory(informer)))
    for controller in controllers:
        ok = controller.is_running()
        checks.append((f"controller {controller.name}", ok, "" if ok else "not running"))
    if stopping:
        checks.append(("shutdown", False, "shutting down"))
    return checks
