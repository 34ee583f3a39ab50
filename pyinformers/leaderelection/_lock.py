"""The resource lock an elector competes for: one ``coordination.k8s.io/v1`` Lease.

:class:`ResourceLock` is the small interface the elector needs (declared here,
by its consumer): read the record with its resourceVersion, create it, and
replace it *only if* it still has the resourceVersion we read. That
compare-and-swap is the whole of the mutual exclusion: two candidates that
read the same version and both write, one gets ``409 Conflict`` and has lost.

:class:`LeaseLock` implements it on a Lease through
:class:`~pyinformers.api._client.ResourceClient` (so kubeconfig, in-cluster
tokens and TLS apply as configured). It remembers the last Lease it read or
wrote, to keep the object's labels and annotations when it writes the spec,
and so that a leader can renew with one PUT on its last known version (the
"fast path") without reading first.

Every call takes a ``timeout`` (seconds): an elector bounds a renewal by the
time left before its leadership would end.

Thread-safety: a lock is used by one elector, whose calls are serialised;
``describe``/``identity`` may be read from any thread.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, runtime_checkable

from pyinformers.api._client import ResourceClient
from pyinformers.api._errors import NotFound
from pyinformers.leaderelection._record import LeaderElectionRecord
from pyinformers.resources import LEASES

__all__ = ["ResourceLock", "LeaseLock"]


@runtime_checkable
class ResourceLock(Protocol):
    """What an elector needs from the object it competes for."""

    @property
    def identity(self) -> str:
        """This candidate's identity (written as ``holderIdentity``)."""

    def describe(self) -> str:
        """``namespace/name`` of the lock, for logs."""

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, str]:
        """The current record and its resourceVersion; ``NotFound`` when there is none."""

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> str:
        """Create the lock holding ``record``; ``AlreadyExists`` when someone else was first."""

    def update(
        self, record: LeaderElectionRecord, resource_version: str, timeout: float | None = None
    ) -> str:
        """Replace the record if the lock is still at ``resource_version``; ``Conflict`` otherwise."""


class LeaseLock:
    """A :class:`ResourceLock` on the Lease ``namespace/name``, written as ``identity``."""

    def __init__(
        self,
        api_client: Any,
        name: str,
        namespace: str,
        identity: str,
        *,
        labels: dict | None = None,
    ) -> None:
        if not name or not namespace:
            raise ValueError("a Lease lock needs a name and a namespace")
        if not identity:
            raise ValueError(
                "a Lease lock needs a non-empty identity (an empty holder means 'released')"
            )
        self._api_client = api_client
        self.name = name
        self.namespace = namespace
        self._identity = identity
        self._labels = dict(labels or {})
        self._lock = threading.Lock()
        self._last: dict | None = None  # the last Lease read or written (its metadata is reused)

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _client(self, timeout: float | None) -> ResourceClient[Any]:
        # ResourceClient is stateless and cheap: one per call carries that call's timeout.
        return ResourceClient(self._api_client, LEASES, request_timeout=timeout)

    def _remember(self, lease: dict) -> str:
        with self._lock:
            self._last = lease
        return str((lease.get("metadata") or {}).get("resourceVersion") or "")

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, str]:
        lease = self._client(timeout).get(self.name, self.namespace)
        return LeaderElectionRecord.from_spec(lease.get("spec")), self._remember(lease)

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> str:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self._labels:
            metadata["labels"] = dict(self._labels)
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": metadata,
            "spec": record.to_spec(),
        }
        return self._remember(self._client(timeout).create(body, self.namespace))

    def update(
        self, record: LeaderElectionRecord, resource_version: str, timeout: float | None = None
    ) -> str:
        with self._lock:
            last = self._last
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if last is not None:
            kept = last.get("metadata") or {}
            for field in ("labels", "annotations", "uid"):
                if kept.get(field):
                    metadata[field] = kept[field]
        metadata["resourceVersion"] = resource_version
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": metadata,
            "spec": record.to_spec(),
        }
        return self._remember(self._client(timeout).replace(body))

    def delete(self, timeout: float | None = None) -> None:
        """Delete the Lease (a membership lease on clean shutdown); NotFound is not an error."""
        try:
            self._client(timeout).delete(self.name, self.namespace)
        except NotFound:
            pass

    def __repr__(self) -> str:
        return f"<LeaseLock {self.describe()} identity={self._identity!r}>"
