"""The list/watch seam a Reflector reads from: the :class:`ListerWatcher` protocol and :class:`ListWatch` over HTTP.

A Reflector needs only two calls on one collection: a paged ``list`` and a
``watch`` from a resourceVersion. :class:`ListerWatcher` states them;
:class:`ListWatch` implements them with a
:class:`~pyinformers.api._client.ResourceClient` restricted to one namespace
and selectors; tests implement them with scripted pages and events.

Thread-safety: :class:`ListWatch` holds no mutable state.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pyinformers.api._client import ListPage, ResourceClient, Selector, selector_query
from pyinformers.api._resource import Resource
from pyinformers.api._watch import WatchStream

__all__ = ["ListerWatcher", "ListWatch"]


@runtime_checkable
class ListerWatcher(Protocol):
    """What a Reflector reads from: one collection, listed in pages and watched.

    Implementations: :class:`ListWatch` over HTTP; scripted fakes in tests.
    """

    def list(
        self,
        *,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage[Any]: ...

    def watch(
        self,
        *,
        resource_version: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
    ) -> WatchStream: ...


class ListWatch:
    """The :class:`ListerWatcher` of one resource (optionally one namespace and selectors) over HTTP."""

    def __init__(
        self,
        client: ResourceClient[Any],
        *,
        namespace: str | None = None,
        label_selector: Selector = None,
        field_selector: Selector = None,
        metadata_only: bool = False,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.label_selector = selector_query(label_selector, "label")
        self.field_selector = selector_query(field_selector, "field")
        #: list and watch ``PartialObjectMetadata`` (see :mod:`pyinformers.api._metadata`)
        self.metadata_only = bool(metadata_only)

    @property
    def resource(self) -> Resource[Any]:
        return self.client.resource

    def list(
        self,
        *,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ListPage[Any]:
        return self.client.list(
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            metadata_only=self.metadata_only,
        )

    def watch(
        self,
        *,
        resource_version: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
    ) -> WatchStream:
        return self.client.watch(
            self.namespace,
            resource_version=resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=allow_bookmarks,
            timeout_seconds=timeout_seconds,
            send_initial_events=send_initial_events,
            metadata_only=self.metadata_only,
        )

    def __repr__(self) -> str:
        parts = [str(self.client.resource)]
        if self.namespace:
            parts.append(f"namespace={self.namespace}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector!r}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector!r}")
        if self.metadata_only:
            parts.append("metadata-only")
        return f"<ListWatch {' '.join(parts)}>"
