"""pyinformers.manager: the process an operator runs in.

* :class:`Operator` -- the operator's entry point for a program with flags:
  controller-runtime's flags (each with a ``PYINFORMERS_*`` variable),
  logging, a :class:`Manager`, an Events recorder, SIGTERM handling;
  ``python -m pyinformers rbac`` reads its declarations offline.
* :class:`Manager` -- for embedding: runs controllers on one API client and
  one informer factory, with ``/metrics``, ``/healthz`` and ``/readyz``,
  signal handling, and optional leader election
  (:class:`LeaderElectionConfig`) or key sharding (:class:`ShardingConfig`)
  across replicas (docs/ha.rst); :class:`TLSFiles` and
  :class:`ApiServerAuth` secure its ``/metrics``.
* :class:`WebhookServer` -- admission and conversion webhooks
  (:mod:`pyinformers.webhook`) over HTTPS; the Manager runs one with
  ``webhooks=`` (docs/webhooks.rst).

Layering: imports ``clock``, ``api``, ``cache``, ``workqueue``,
``leaderelection``, ``record``, ``controller`` and ``webhook``; never ``testing``. The
modules of this package are internal: import from ``pyinformers.manager``.
"""

from pyinformers._exports import publish
from pyinformers.manager._leader import LeaderElectionConfig
from pyinformers.manager._manager import ANY_PORT, ConfigurationError, Manager
from pyinformers.manager._metrics_auth import ApiServerAuth
from pyinformers.manager._operator import (
    DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
    DEFAULT_METRICS_BIND_ADDRESS,
    ENV_PREFIX,
    FLAGS,
    Flag,
    JsonFormatter,
    KeyValueFormatter,
    Operator,
    configure_logging,
    parse_bind_address,
)
from pyinformers.manager._probes import TLSFiles
from pyinformers.manager._sharding import ShardingConfig
from pyinformers.manager._webhooks import WebhookServer

__all__ = [
    "ANY_PORT",
    "DEFAULT_HEALTH_PROBE_BIND_ADDRESS",
    "DEFAULT_METRICS_BIND_ADDRESS",
    "ENV_PREFIX",
    "FLAGS",
    "ApiServerAuth",
    "ConfigurationError",
    "Flag",
    "JsonFormatter",
    "KeyValueFormatter",
    "LeaderElectionConfig",
    "Manager",
    "Operator",
    "ShardingConfig",
    "TLSFiles",
    "WebhookServer",
    "configure_logging",
    "parse_bind_address",
]

publish(globals(), __all__)
