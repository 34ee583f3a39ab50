"""The reflector's list semantics on either server (issues 12 and 15): run with ``--k8s-server=real`` too.

By default an informer syncs with a streaming list (a watch with
``sendInitialEvents=true``, no resourceVersion, ``resourceVersionMatch=
NotOlderThan``: a consistent snapshot, then the bookmark that ends it), and a
relist after 410 streams again. On the list path (``use_watch_list=False``,
and the fallback for servers that refuse or ignore streaming lists) the first
list asks ``resourceVersion=0`` (answered from the API server's watch cache)
and a relist after 410 asks a consistent read (no resourceVersion). Either
way the relist sees every write made before it. The 410 is injected at the
list/watch seam (compacting a real etcd on demand is not something a test
can do), the requests themselves go to the server.
"""

from __future__ import annotations

import threading

import pytest

from pyinformers.api import Gone
from pyinformers.api._client import ResourceClient
from pyinformers.api._listwatch import ListWatch
from pyinformers.cache import SharedIndexInformer
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(120)


class Recording:
    """A ListWatch that records the calls and can make the next watch answer 410.

    ``ignore_initial_events``: it plays a server that ignores ``sendInitialEvents``
    and ``allowWatchBookmarks`` (the watch goes out without them, so the server
    sends the current objects as ADDED events and nothing marks their end).
    Without ``allowWatchBookmarks``: kube-apiserver 1.36 ends the ADDED events
    of a watch with no resourceVersion with the initial-events-end bookmark
    even when ``sendInitialEvents`` is not asked, if bookmarks are allowed.
    """

    def __init__(self, inner: ListWatch, *, ignore_initial_events: bool = False) -> None:
        self.inner = inner
        self.resource = inner.resource
        self.ignore_initial_events = ignore_initial_events
        self.lists: list[dict] = []
        self.watches: list[dict] = []
        self.gone_next = threading.Event()
        self.stream = None  # the last watch opened (None until the first is)

    def list(self, **kwargs):
        self.lists.append(dict(kwargs))
        return self.inner.list(**kwargs)

    def watch(self, **kwargs):
        self.watches.append(dict(kwargs))
        if self.gone_next.is_set():
            self.gone_next.clear()
            raise Gone("too old resource version (injected)", reason="Expired")
        if self.ignore_initial_events:
            kwargs["send_initial_events"] = kwargs["allow_bookmarks"] = False
        self.stream = self.inner.watch(**kwargs)
        return self.stream


def _names(objects):
    """Our ConfigMaps' names (a real namespace also holds kube-root-ca.crt)."""
    return sorted(o["metadata"]["name"] for o in objects if o["metadata"]["name"].startswith("cm-"))


def _seeded(k8s):
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    for i in range(3):
        client.create(
            {"metadata": {"name": f"cm-{i}", "namespace": k8s.namespace}, "data": {"i": str(i)}}
        )
    return client


def test_the_default_sync_is_a_streaming_list_and_so_is_a_relist_after_410(k8s):
    client = _seeded(k8s)
    ns = k8s.namespace
    lw = Recording(ListWatch(client, namespace=ns))
    informer = SharedIndexInformer(
        lw,
        name="watch-list",
        metrics_registry=False,
        reflector_options={"backoff_initial": 0.05, "backoff_max": 0.2},
    )
    informer.start()
    try:
        assert informer.wait_for_cache_sync(60)
        assert lw.lists == []  # no list request at all
        first = lw.watches[0]
        assert first["send_initial_events"] is True and first["resource_version"] is None
        expected = _names(client.list(ns).items)
        assert _names(informer.indexer.list()) == expected  # synced means: all of it, at once
        reflector = informer.reflector
        assert reflector.stats.lists == 1 and reflector.stats.errors == 0

        lw.gone_next.set()
        client.create({"metadata": {"name": "cm-late", "namespace": ns}, "data": {"i": "late"}})
        lw.stream.close()
        eventually(
            lambda: reflector.stats.relists >= 1 and reflector.stats.lists >= 2,
            30,
            what="the relist",
        )
        relist = lw.watches[-1]
        assert relist["send_initial_events"] is True and relist["resource_version"] is None, (
            lw.watches
        )
        assert lw.lists == []
        eventually(
            lambda: "cm-late" in _names(informer.indexer.list()), 30, what="cm-late in the cache"
        )
        assert _names(informer.indexer.list()) == _names(client.list(ns).items)
    finally:
        assert informer.stop(timeout=10)


def test_a_server_that_ignores_send_initial_events_is_listed_instead(k8s):
    client = _seeded(k8s)
    ns = k8s.namespace
    lw = Recording(ListWatch(client, namespace=ns), ignore_initial_events=True)
    errors: list = []
    informer = SharedIndexInformer(
        lw,
        name="ignored-watch-list",
        metrics_registry=False,
        reflector_options={"initial_events_timeout": 1.0, "on_watch_error": errors.append},
    )
    informer.start()
    try:
        assert informer.wait_for_cache_sync(60)
        assert [type(e).__name__ for e in errors] == ["StreamingListUnsupported"]
        assert lw.lists[0]["resource_version"] == "0"  # the fallback reads the watch cache
        assert _names(informer.indexer.list()) == _names(client.list(ns).items)
        client.create({"metadata": {"name": "cm-late", "namespace": ns}, "data": {"i": "late"}})
        eventually(
            lambda: "cm-late" in _names(informer.indexer.list()), 30, what="cm-late in the cache"
        )
    finally:
        assert informer.stop(timeout=10)


def test_first_list_reads_the_watch_cache_and_a_relist_after_410_reads_consistently(k8s):
    client = _seeded(k8s)
    ns = k8s.namespace
    lw = Recording(ListWatch(client, namespace=ns))
    informer = SharedIndexInformer(
        lw,
        name="list-semantics",
        metrics_registry=False,
        reflector_options={"backoff_initial": 0.05, "backoff_max": 0.2, "use_watch_list": False},
    )
    informer.start()
    try:
        assert informer.wait_for_cache_sync(60)
        assert lw.lists[0]["resource_version"] == "0"
        assert all(
            call["resource_version"] is None for call in lw.lists[1:]
        )  # continued pages, if any
        expected = _names(client.list(ns).items)
        eventually(
            lambda: _names(informer.indexer.list()) == expected,
            30,
            what="the first list in the cache",
        )
        first_lists = len(lw.lists)
        # Synced means listed: the reflector opens its watch after that, on its own thread.
        eventually(lambda: lw.stream is not None, 30, what="the watch after the list")

        # The watch breaks and re-opening it answers 410: the relist must be a consistent read,
        # which sees a write made just before it.
        lw.gone_next.set()
        client.create({"metadata": {"name": "cm-late", "namespace": ns}, "data": {"i": "late"}})
        lw.stream.close()
        reflector = informer.reflector
        eventually(
            lambda: reflector.stats.relists >= 1 and reflector.stats.lists >= 2,
            30,
            what="the relist",
        )
        relist = lw.lists[first_lists]
        assert relist["resource_version"] is None, relist  # a consistent read
        eventually(
            lambda: "cm-late" in _names(informer.indexer.list()), 30, what="cm-late in the cache"
        )
        assert _names(informer.indexer.list()) == _names(client.list(ns).items)
    finally:
        assert informer.stop(timeout=10)
