"""Where an :class:`~pyinformers.record.EventRecorder` writes Events.

:class:`EventSink` is the two-method seam the recorder's writer thread calls
(client-go's ``EventSink``, minus the update it never needs): tests pass a
fake, production code gets :class:`ResourceClientSink`, which writes
``core/v1`` Events through a :class:`~pyinformers.api._client.ResourceClient`.

Errors are the typed :mod:`pyinformers.api._errors` (``NotFound`` on a patch of
an Event that expired, ``AlreadyExists`` on a create whose name is taken);
anything else that is not an ``ApiError`` is treated as a network failure.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["EventSink", "ResourceClientSink"]


@runtime_checkable
class EventSink(Protocol):
    """Writes Events. Called from the recorder's single writer thread only."""

    def create(self, event: dict, namespace: str) -> dict:
        """Create ``event`` in ``namespace``; return the stored object."""

    def patch(self, name: str, namespace: str, body: dict) -> dict:
        """Merge-patch the Event ``namespace/name`` with ``body``; return the stored object."""


class ResourceClientSink:
    """An :class:`EventSink` over the API server's ``/api/v1/namespaces/{ns}/events``."""

    def __init__(self, api_client: Any) -> None:
        # Imported here so the recorder module stays importable on its own.
        from pyinformers.api._client import ResourceClient
        from pyinformers.resources import EVENTS

        self._client: ResourceClient[Any] = ResourceClient(api_client, EVENTS)

    def create(self, event: dict, namespace: str) -> dict:
        return self._client.create(event, namespace=namespace)

    def patch(self, name: str, namespace: str, body: dict) -> dict:
        return self._client.patch(name, body, namespace=namespace, patch_type="merge")

    def __repr__(self) -> str:
        return f"<ResourceClientSink {self._client!r}>"
