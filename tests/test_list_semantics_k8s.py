"""The reflector's list semantics on either server (issue 12, item 8): run with ``--k8s-server=real`` too.

The first list asks ``resourceVersion=0`` (answered from the API server's
watch cache); a relist after 410 asks a consistent read (no resourceVersion),
so it sees every write made before it. The 410 is injected at the
list/watch seam (compacting a real etcd on demand is not something a test
can do), the requests themselves go to the server.
"""

from __future__ import annotations

import threading

import pytest

from pyinformers.api import Gone
from pyinformers.api.client import ResourceClient
from pyinformers.api.listwatch import ListWatch
from pyinformers.cache import SharedIndexInformer
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(120)


class Recording:
    """A ListWatch that records the list calls and can make the next watch answer 410."""

    def __init__(self, inner: ListWatch) -> None:
        self.inner = inner
        self.resource = inner.resource
        self.lists: list[dict] = []
        self.gone_next = threading.Event()

    def list(self, **kwargs):
        self.lists.append(dict(kwargs))
        return self.inner.list(**kwargs)

    def watch(self, **kwargs):
        if self.gone_next.is_set():
            self.gone_next.clear()
            raise Gone("too old resource version (injected)", reason="Expired")
        self.stream = self.inner.watch(**kwargs)
        return self.stream


def _names(objects):
    """Our ConfigMaps' names (a real namespace also holds kube-root-ca.crt)."""
    return sorted(o["metadata"]["name"] for o in objects if o["metadata"]["name"].startswith("cm-"))


def test_first_list_reads_the_watch_cache_and_a_relist_after_410_reads_consistently(k8s):
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    ns = k8s.namespace
    for i in range(3):
        client.create({"metadata": {"name": f"cm-{i}", "namespace": ns}, "data": {"i": str(i)}})
    lw = Recording(ListWatch(client, namespace=ns))
    informer = SharedIndexInformer(lw, name="list-semantics", metrics_registry=False,
                                   reflector_options={"backoff_initial": 0.05, "backoff_max": 0.2})
    informer.start()
    try:
        assert informer.wait_for_sync(60)
        assert lw.lists[0]["resource_version"] == "0"
        assert all(call["resource_version"] is None for call in lw.lists[1:])  # continued pages, if any
        expected = _names(client.list(ns).items)
        eventually(lambda: _names(informer.indexer.list()) == expected, 30, what="the first list in the cache")
        first_lists = len(lw.lists)

        # The watch breaks and re-opening it answers 410: the relist must be a consistent read,
        # which sees a write made just before it.
        lw.gone_next.set()
        client.create({"metadata": {"name": "cm-late", "namespace": ns}, "data": {"i": "late"}})
        lw.stream.close()
        reflector = informer.reflector
        eventually(lambda: reflector.stats.relists >= 1 and reflector.stats.lists >= 2, 30, what="the relist")
        relist = lw.lists[first_lists]
        assert relist["resource_version"] is None, relist  # a consistent read
        eventually(lambda: "cm-late" in _names(informer.indexer.list()), 30, what="cm-late in the cache")
        assert _names(informer.indexer.list()) == _names(client.list(ns).items)
    finally:
        assert informer.stop(timeout=10)
