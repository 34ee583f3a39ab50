"""Deprecated: the operator entry point moved to :mod:`pyinformers.manager`.

``from pyinformers.cli import Operator`` keeps working for one release, with a
:class:`DeprecationWarning`; import the same names from ``pyinformers.manager``.
"""

from __future__ import annotations

from typing import Any

from pyinformers._exports import lazy_face

_MOVED = (
    "DEFAULT_HEALTH_PROBE_BIND_ADDRESS",
    "DEFAULT_METRICS_BIND_ADDRESS",
    "ENV_PREFIX",
    "FLAGS",
    "Flag",
    "JsonFormatter",
    "KeyValueFormatter",
    "Operator",
    "configure_logging",
    "parse_bind_address",
)

__getattr__, __dir__ = lazy_face(
    __name__,
    {},
    globals(),
    deprecated={name: f"pyinformers.manager.{name}" for name in _MOVED},
)
__all__: list[Any] = []
