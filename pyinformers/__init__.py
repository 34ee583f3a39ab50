"""pyinformers: Kubernetes controllers the client-go way.

Shared informers keep an indexed local cache of the cluster; event handlers
turn changes into ``namespace/name`` keys; rate-limiting work queues hand the
keys to worker threads; a controller's ``reconcile(key)`` reads the cache and
makes the world match the spec.

This module re-exports the names most users need; everything else lives in
the subpackages (``pyinformers.api``, ``pyinformers.cache``,
``pyinformers.workqueue``, ``pyinformers.controller``, ``pyinformers.record``,
``pyinformers.testing``).
"""

from pyinformers.clock import REAL_CLOCK, Clock, FakeClock, RealClock

__version__ = "0.1.0"

__all__ = [
    "Clock",
    "FakeClock",
    "REAL_CLOCK",
    "RealClock",
    "__version__",
]
