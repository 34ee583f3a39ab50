"""pyinformers.leaderelection: leader election and key sharding on ``coordination.k8s.io/v1`` Leases.

* :class:`LeaderElector` -- client-go's leader election as a steppable state
  machine on the injected clock (:mod:`.elector`), over a :class:`LeaseLock`
  (:mod:`.lock`); :class:`ElectionTiming` holds and validates its durations.
* :class:`LeaderElectionRecord` and the MicroTime format (:mod:`.record`).
* :class:`ShardCoordinator` -- one replica's side of key sharding over
  membership and per-shard Leases (:mod:`.shards`), with the balanced
  rendezvous hashing of :func:`assign` and :func:`shard_of` (:mod:`.rendezvous`).

Layering: imports ``clock``, ``metrics``, ``api`` and ``resources``; the
``controller`` layer builds on it (the Manager's ``leader_election``).
"""

from pyinformers._exports import publish
from pyinformers.leaderelection._elector import (
    JITTER_FACTOR,
    ElectionTiming,
    ElectorState,
    LeaderElector,
)
from pyinformers.leaderelection._lock import LeaseLock, ResourceLock
from pyinformers.leaderelection._record import (
    LeaderElectionRecord,
    format_micro_time,
    parse_micro_time,
)
from pyinformers.leaderelection._rendezvous import assign, shard_of
from pyinformers.leaderelection._shards import ShardCoordinator

__all__ = [
    "JITTER_FACTOR",
    "ElectionTiming",
    "ElectorState",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
    "ShardCoordinator",
    "assign",
    "format_micro_time",
    "parse_micro_time",
    "shard_of",
]

publish(globals(), __all__)
