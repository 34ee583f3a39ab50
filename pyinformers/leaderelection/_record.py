"""The leader election record kept in a Lease's ``spec``, and the MicroTime format it is written in.

A :class:`LeaderElectionRecord` is a frozen value: ``holder`` (empty when
nobody holds the lease), ``lease_duration`` in whole seconds, ``acquire_time``
and ``renew_time`` as wall-clock seconds since the epoch, and ``transitions``
(how many times the lease changed hands).

MicroTime. The API server parses ``acquireTime``/``renewTime`` with the Go
layout ``2006-01-02T15:04:05.000000Z07:00``: exactly six fractional digits.
``...:35Z`` (none) and ``...:40.123456789Z`` (nine) are rejected with 400,
an offset such as ``+02:00`` is accepted and answered in UTC (transcript
``tests/transcripts/v1.36.3/leases.jsonl``). :func:`format_micro_time` (the one of
:mod:`pyinformers.api.meta`) always writes six digits in UTC;
:func:`parse_micro_time` reads any RFC 3339 time.

Nothing in a record is trusted for timing: electors measure lease expiry on
their own clock from the moment they *observed* a record change, never from
``renewTime`` (clocks of two machines disagree; their rates roughly agree).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyinformers.api.meta import format_micro_time, parse_time_seconds

__all__ = ["LeaderElectionRecord", "format_micro_time", "parse_micro_time"]


def parse_micro_time(value: str | None) -> float | None:
    """An RFC 3339 time (any precision, ``Z`` or an offset) as seconds since the epoch; None for None/""."""
    return parse_time_seconds(value)


@dataclass(frozen=True)
class LeaderElectionRecord:
    """What a Lease says about its holder. Equal records mean "nothing happened"."""

    holder: str = ""
    lease_duration: int = 15
    acquire_time: float | None = None
    renew_time: float | None = None
    transitions: int = 0

    @staticmethod
    def duration_seconds(lease_duration: float) -> int:
        """The whole seconds written for a lease of ``lease_duration`` (rounded up: never shorter)."""
        return max(1, int(math.ceil(lease_duration)))

    def to_spec(self) -> dict:
        """The Lease ``spec`` for this record (MicroTimes with six fractional digits)."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": int(self.lease_duration),
            "leaseTransitions": int(self.transitions),
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> LeaderElectionRecord:
        """The record of a Lease ``spec`` (missing fields read as an empty, unheld lease)."""
        spec = spec or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_micro_time(spec.get("acquireTime")),
            renew_time=parse_micro_time(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        )
