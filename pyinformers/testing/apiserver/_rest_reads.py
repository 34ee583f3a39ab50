"""The read verbs of the embedded API server: get, list and the start of a watch.

Owns :meth:`ReadVerbs.get`, :meth:`ReadVerbs.list` (label and field selectors,
``limit``/``continue`` paging at a fixed resourceVersion,
``resourceVersion``/``resourceVersionMatch``, 410 for a continue token older
than the compaction) and :meth:`ReadVerbs.open_watch` (where a watch starts:
initial events or history replay), and :func:`matches`, the selector test
that deletecollection shares.

Invariants: every page of a list is read at the resourceVersion of its first
page; ``resourceVersion=0`` is served as from the watch cache (no paging).

Thread-safety: reads take consistent snapshots from the store, and a watcher
is registered with the hub under the store lock, so it misses nothing.
"""

from __future__ import annotations

import bisect
import builtins
from typing import Any

from pyinformers.testing.apiserver._field_selection import selectable
from pyinformers.testing.apiserver._objects import meta_of
from pyinformers.testing.apiserver._options import (
    ListOptions,
    WatchOptions,
    check_field_selector,
    decode_continue,
    encode_continue,
    rv_param,
    rv_syntax_error,
)
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest_core import RestCore
from pyinformers.testing.apiserver._status import StatusError, bad_request, expired
from pyinformers.testing.apiserver._watch import Watcher

__all__ = ["ReadVerbs", "matches"]


class ReadVerbs(RestCore):
    """get, list and the start of a watch."""

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict:
        return self._out(rt, self._get_existing(rt, self._ns(rt, namespace), name))

    def list(self, rt: ResourceType, namespace: str | None, options: ListOptions) -> dict:
        """A List object (one page of it when ``options.limit`` is set)."""
        ns = self._ns(rt, namespace) if namespace else None
        check_field_selector(rt.storage_key, options.field_selector)
        start = ""
        at_rv: int | None
        if options.continue_:
            at_rv, start = decode_continue(options.continue_)
            if options.resource_version not in (None, "0"):
                raise bad_request("specifying resource version is not allowed when using continue")
            if at_rv < self.store.compacted_rv:
                # The answer carries a token that continues from the same key at the current rv.
                fresh = encode_continue(self.store.current_rv, start)
                raise expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter, or use the continue token "
                    "in this response to retrieve the remainder of the results. Continuing with the "
                    "provided token results in an inconsistent list - objects that were created, modified, "
                    "or deleted between the time the first chunk was returned and now may show up in the list.",
                    metadata={"continue": fresh},
                )
        else:
            requested = rv_param(options.resource_version)
            at_rv = requested if options.resource_version_match == "Exact" else None
            if (
                requested
                and options.resource_version_match != "Exact"
                and requested > self.store.current_rv
            ):
                self.store.snapshot(
                    rt.storage_key, ns, at_rv=requested
                )  # raises "Too large resource version"
        snap = self.store.list_snapshot(rt.storage_key, ns, at_rv=at_rv)
        keys, objects, list_rv = snap.keys, snap.objects, snap.rv
        first = bisect.bisect_right(keys, start) if start else 0
        # resourceVersion=0 is served from the watch cache, which ignores limit (all items, no continue).
        limit = 0 if options.resource_version == "0" else options.limit
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if options.label_selector is None and options.field_selector is None:
            end = len(objects) if not limit else min(len(objects), first + limit)
            page = objects[first:end]
            if end < len(objects):
                metadata["continue"] = encode_continue(list_rv, keys[end - 1])
                metadata["remainingItemCount"] = len(objects) - end
        else:
            # Filter only as far as this page needs. A full page says "continue" whenever any object
            # (matching or not) comes after its last item, as the real server's paged reads do: the
            # next page may then be empty.
            page = []
            for i in range(first, len(objects)):
                obj = objects[i]
                if not matches(obj, options, rt.storage_key):
                    continue
                page.append(obj)
                if limit and len(page) == limit:
                    if i < len(objects) - 1 and not self._reads_one_key(
                        rt, ns, options.field_selector
                    ):
                        metadata["continue"] = encode_continue(list_rv, keys[i])
                    break
        return self._list_object(rt, metadata, page)

    @staticmethod
    def _reads_one_key(rt: ResourceType, namespace: str | None, field_selector: Any) -> bool:
        """Whether the real server reads just one object's key for this list (``metadata.name=X`` where the key is known)."""
        if field_selector is None or (rt.namespaced and namespace is None):
            return False
        return any(
            r.field == "metadata.name" and r.operator.value == "="
            for r in field_selector.requirements
        )

    def open_watch(
        self, rt: ResourceType, namespace: str | None, options: WatchOptions, *, max_queue: int
    ) -> tuple[Watcher, builtins.list[dict], int, bool]:
        """Register a watcher; returns (watcher, initial objects, start rv, send initial-events-end bookmark).

        Where a watch starts, as kube-apiserver 1.36 decides it: ``sendInitialEvents``
        left out means true for a watch without a resourceVersion (or ``"0"``) and
        false for one from a resourceVersion. With initial events the current
        objects come first as ADDED and, when the watch allows bookmarks, the
        bookmark annotated ``k8s.io/initial-events-end`` -- whether or not the
        client asked for initial events by name. Without them a watch replays
        history after its resourceVersion, or (none, or ``"0"``) starts from now.
        """
        ns = self._ns(rt, namespace) if namespace else None
        check_field_selector(rt.storage_key, options.field_selector)
        watcher = Watcher(
            rt,
            ns,
            label_selector=options.label_selector,
            field_selector=options.field_selector,
            max_queue=max_queue,
        )
        if rt.crd_name and self.webhooks.converts(rt.crd_name):
            crd_name = rt.crd_name
            watcher.convert = lambda obj: self.webhooks.convert(crd_name, [obj], rt.api_version)[0]
        try:
            rv = rv_param(options.resource_version)
        except (
            StatusError
        ):  # a watch's bad resourceVersion is a 500 without a reason on the real server
            raise StatusError(500, "", rv_syntax_error(options.resource_version or "")) from None
        initial_events = options.send_initial_events
        end_marker = options.allow_bookmarks
        if initial_events is None:
            initial_events = not rv
            end_marker = (
                end_marker and not options.legacy_path
            )  # sendInitialEvents is defaulted only for ?watch=true
        if initial_events:
            objects, start = self.hub.open(watcher, since_rv=None, initial_state=True)
            if rv and rv > start:
                self.hub.close(watcher)
                self.store.snapshot(
                    rt.storage_key, ns, at_rv=rv
                )  # raises "Too large resource version"
            # The end marker is a bookmark: only a watch that allows bookmarks gets it.
            return watcher, objects, start, end_marker
        _, start = self.hub.open(watcher, since_rv=rv or None, initial_state=False)
        return watcher, [], start, False


def matches(obj: dict, options: Any, storage_key: str) -> bool:
    """Whether ``obj`` (of the resource stored at ``storage_key``) passes the options' selectors."""
    if options.label_selector is not None and not options.label_selector.matches(
        meta_of(obj).get("labels")
    ):
        return False
    field = options.field_selector
    if field is not None and not field.matches(selectable(storage_key, obj, field)):
        return False
    return True
