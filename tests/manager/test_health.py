"""The Manager's probes say why (issue 12, items 1 and 5).

* a thread of an informer that ends unexpectedly fails ``/healthz`` with the reason;
* a controller started before its CRD is installed keeps retrying, and
  ``/readyz?verbose`` (and the sync timeout) say "is the CRD installed?".
"""

from __future__ import annotations

import threading

import pytest

from pyinformers.api._resource import Resource
from pyinformers.controller import CacheSyncTimeout, Controller
from pyinformers.testing import eventually
from tests.manager.test_manager import WAIT, Echo, get, make_manager

pytestmark = pytest.mark.timeout(60)

THINGS = Resource("example.com", "v1", "things", "Thing")


class WatchThings(Controller):
    def __init__(self, factory, registry):
        super().__init__("things", metrics_registry=registry)
        self.watch(factory.informer(THINGS))

    def reconcile(self, key):
        pass


class Crash(BaseException):
    pass


def test_healthz_fails_with_the_reason_when_an_informer_thread_dies(api_server):
    manager, registry = make_manager(api_server)
    manager.add(Echo(manager.factory, registry))
    manager.start()
    try:
        assert get(manager.health_address, "/healthz") == (200, "ok\n")
        informer = next(iter(manager.factory.informers().values()))

        def crash(**kwargs):
            raise Crash("watch blew up")

        informer.reflector._lw.watch = crash  # the next re-watch kills the reflector thread
        api_server.faults.drop_watches()
        eventually(
            lambda: not informer.healthy(),
            timeout=WAIT,
            what="the informer to notice its dead reflector",
        )
        status, body = get(manager.health_address, "/healthz?verbose")
        assert status == 503
        assert (
            "[-]informer v1/configmaps failed: the reflector thread crashed: Crash: watch blew up"
            in body
        )
    finally:
        manager.stop(5)


def test_a_missing_crd_is_named_in_readyz_and_in_the_sync_timeout(api_server):
    manager, registry = make_manager(api_server, sync_timeout=WAIT)
    manager.add(WatchThings(manager.factory, registry))
    errors = []

    def start():
        try:
            manager.start()
        except Exception as err:
            errors.append(err)

    starter = threading.Thread(target=start, name="test-manager-start")
    starter.start()
    try:
        eventually(
            lambda: manager.health_address is not None, timeout=WAIT, what="the probe server"
        )
        eventually(
            lambda: "is the CRD installed?" in get(manager.health_address, "/readyz?verbose")[1],
            timeout=WAIT,
            what="readyz to name the missing CRD",
        )
        status, body = get(manager.health_address, "/readyz?verbose")
        assert status == 503
        assert "informer example.com/v1/things failed: cache not synced" in body
        assert "things.example.com" in body
    finally:
        manager.stop(5)
        starter.join(WAIT)

    manager, registry = make_manager(api_server, sync_timeout=5)
    manager.add(WatchThings(manager.factory, registry))
    with pytest.raises(CacheSyncTimeout, match="is the CRD installed"):
        manager.start()
