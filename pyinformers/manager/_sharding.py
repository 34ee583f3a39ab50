"""Sharding for the :class:`~pyinformers.manager._manager.Manager`: settings and the controller glue.

``Manager(sharding=ShardingConfig("my-operator"))`` runs every controller on
every replica, each replica reconciling only the keys of the shards it holds
(the protocol and its safety argument: :mod:`pyinformers.leaderelection._shards`
and docs/ha.rst). This module wires a
:class:`~pyinformers.leaderelection._shards.ShardCoordinator` into controllers:

* :class:`ShardAdmission` admits a reconcile only while the replica holds
  the key's shard and counts it in flight, so a shard is released only once
  its reconciles finished;
* the key filter (``coordinator.owns``) drops foreign keys at enqueue time,
  so a replica's queue holds only its own keys;
* :func:`requeue_shards` re-enqueues, from the caches, every key of the
  shards a replica just took: the keys that moved are reconciled by their
  new owner without waiting for an event;
* :class:`RunSharded` is the Manager's run mode
  (:mod:`pyinformers.manager._run_mode`): once the caches synced it gates
  the controllers, starts the coordinator and the workers, and on a stop
  hands the shards back before the controllers drain.

Threading: admission and filter are called from worker and handler threads;
:func:`requeue_shards` and the run mode's callbacks from the coordinator's
thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pyinformers.controller._controller import Controller
from pyinformers.controller._handlers import EnqueueForObject
from pyinformers.leaderelection import ElectionTiming
from pyinformers.leaderelection._shards import ShardCoordinator
from pyinformers.manager._leader import default_identity
from pyinformers.manager._run_mode import Check, Crew
from pyinformers.manager._shard_caches import ShardCacheAdmission, ShardCaches

__all__ = ["RunSharded", "ShardAdmission", "ShardingConfig", "requeue_shards"]

log = logging.getLogger("pyinformers.manager._manager")


@dataclass(frozen=True)
class ShardingConfig:
    """How a Manager shares its keys with the other replicas of the same operator.

    :param name: the shard group: prefix of its Leases, shared by the replicas.
    :param shards: fixed number of shards (default 24: splits evenly over 1,
        2, 3, 4, 6, 8 or 12 replicas). All replicas must agree on it; more
        shards spread keys more evenly and move fewer at a time, at the cost
        of more Leases (written only on handovers).
    :param namespace: the Leases' namespace (default: the Pod's own).
    :param identity: this replica's identity (default hostname and a uuid).
    :param timing: the membership Lease's timing (defaults 15 / 10 / 2 s).
    :param exit_on_lost_membership: when this replica cannot renew its
        membership in time it has already stopped reconciling; by default the
        process then exits with status 1 so the Deployment restarts it as a
        new member. False: stop the Manager instead.
    :param shard_caches: cache, on each replica, only the objects of the
        shards it holds: the controllers' primaries and their children carry
        a shard label the library writes (once per object) and keeps, and
        each held shard is its own cache, re-listed only when it moves
        (:mod:`pyinformers.manager._shard_caches`; costs and when not to use
        it: docs/ha.rst). Off by default.
    """

    name: str
    shards: int = 24
    namespace: str | None = None
    identity: str | None = None
    timing: ElectionTiming = field(default_factory=ElectionTiming)
    exit_on_lost_membership: bool = True
    shard_caches: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("sharding needs a name (the shard group's Lease prefix)")
        if isinstance(self.shards, bool) or not isinstance(self.shards, int) or self.shards < 1:
            raise ValueError(f"shards must be an int >= 1, got {self.shards!r}")


class ShardAdmission:
    """Admit a reconcile only while this replica holds the key's shard (and count it in flight)."""

    __slots__ = ("coordinator",)

    def __init__(self, coordinator: ShardCoordinator) -> None:
        self.coordinator = coordinator

    def enter(self, key: Any) -> bool:
        return self.coordinator.enter(str(key))

    def exit(self, key: Any) -> None:
        self.coordinator.exit(str(key))


def requeue_shards(
    controllers: Iterable[Controller], coordinator: ShardCoordinator, shards: set
) -> int:
    """Enqueue every cached key of ``shards`` into each controller's queue; returns how many."""
    count = 0
    for controller in controllers:
        seen: set[int] = set()
        for watch in controller.watches:
            if not isinstance(watch.handler, EnqueueForObject) or id(watch.informer) in seen:
                continue  # owners and mapped keys come back through their primary objects
            seen.add(id(watch.informer))
            indexer = getattr(watch.informer, "indexer", None)
            if indexer is None:
                continue
            for key in indexer.list_keys():
                if coordinator.shard_of(key) in shards:
                    controller.queue.add(key)
                    count += 1
    return count


class RunSharded:
    """Reconcile only the keys of the shards this replica holds in the group ``config.name``.

    :param view: lists the group's Leases (the Manager's Lease informer, synced with the caches).
    :param caches: the shard-aware caches, when ``config.shard_caches``.
    """

    def __init__(
        self,
        api_client: Any,
        config: ShardingConfig,
        namespace: str,
        view: Callable[[], Iterable[Any]],
        caches: ShardCaches | None,
    ) -> None:
        self.api_client = api_client
        self.config = config
        self.namespace = namespace
        self.view = view
        self.caches = caches
        #: The coordinator, once started.
        self.coordinator: ShardCoordinator | None = None

    def start(self, crew: Crew) -> None:
        config, caches, controllers = self.config, self.caches, crew.controllers

        def gained(shards: set) -> None:
            if caches is not None:
                caches.follow(coordinator.held())
            requeue_shards(controllers, coordinator, shards)

        def released(shards: set) -> None:
            if caches is not None:  # drained and released: no reconcile reads these caches any more
                caches.follow(coordinator.held())

        def lost() -> None:
            if not crew.stopping.is_set():
                crew.lost(
                    f"the shard membership lease of {config.name}",
                    exit_process=config.exit_on_lost_membership,
                )

        coordinator = ShardCoordinator(
            self.api_client,
            group=config.name,
            namespace=self.namespace,
            identity=config.identity or default_identity(),
            shards=config.shards,
            timing=config.timing,
            view=self.view,
            on_gained=gained,
            on_released=released,
            on_lost=lost,
        )
        admission = ShardAdmission(coordinator)
        if caches is not None:
            caches.attach(coordinator.owns)
        for controller in controllers:
            controller.set_admission(
                admission
                if caches is None
                else ShardCacheAdmission(coordinator, caches, controller.queue)
            )
            controller.set_key_filter(coordinator.owns)
        if crew.stopping.is_set():
            return
        self.coordinator = coordinator
        log.info(
            "caches synced; joining shard group %s/%s as %s (%d shards)",
            self.namespace,
            config.name,
            coordinator.identity,
            config.shards,
        )
        coordinator.start()
        crew.start(controllers)

    def stop(self, deadline: float) -> bool:
        clean = True
        coordinator = self.coordinator
        if coordinator is not None:  # stop admitting, let in-flight reconciles end, release shards
            clean = coordinator.stop(timeout=max(0.0, deadline - time.monotonic()))
        if self.caches is not None:
            self.caches.stop()
        return clean

    def health_checks(self) -> list[Check]:
        coordinator = self.coordinator
        if coordinator is None:
            return []
        ok = coordinator.member.check(self.config.timing.lease_duration)
        return [("sharding", ok, "" if ok else "not renewing the membership lease")]

    def ready_checks(self) -> list[Check]:
        caches = self.caches
        if caches is None or self.coordinator is None:
            return []
        pending = caches.pending_shards()
        detail = f"shards {pending} not cached yet (their keys wait)" if pending else ""
        return [("shard caches", True, detail)]

    def standby(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<RunSharded {self.namespace}/{self.config.name}>"
