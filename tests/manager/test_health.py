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


@pytest.mark.parametrize("fail", [True, False])
def test_a_handler_with_a_backlog_that_makes_no_progress_shows_in_healthz_and_metrics(
    api_server, fail
):
    from pyinformers.cache import ResourceEventHandlerFuncs
    from pyinformers.resources import CONFIGMAPS

    manager, registry = make_manager(
        api_server, handler_stall_timeout=0.2, fail_health_on_stalled_handler=fail
    )
    manager.add(Echo(manager.factory, registry))
    informer = manager.factory.informer(CONFIGMAPS)
    release = threading.Event()
    informer.add_event_handler(
        ResourceEventHandlerFuncs(on_add=lambda obj, initial: release.wait(WAIT))
    )
    client = manager.factory.client(CONFIGMAPS)
    ns = f"stall-{fail}".lower()
    manager.start()
    try:
        for i in range(3):  # the first blocks the handler, the others wait behind it
            client.create(
                {"metadata": {"name": f"cm-{i}", "namespace": "default", "labels": {"t": ns}}}
            )

        def stalled_check():
            status, body = get(manager.health_address, "/healthz?verbose")
            return (status, body) if "stalled:" in body else None

        status, body = eventually(
            stalled_check, WAIT, what="the stalled handler in /healthz?verbose"
        )
        assert status == (503 if fail else 200)
        line = next(line for line in body.splitlines() if "stalled:" in line)
        assert line.startswith("[-]handler v1/configmaps-" if fail else "[+]handler v1/configmaps-")
        assert "notification(s) waiting" in line
        _, metrics = get(manager.metrics_address, "/metrics")
        stalled = [
            line
            for line in metrics.splitlines()
            if line.startswith("pyinformers_informer_handler_stalled_seconds{")
            and not line.endswith(" 0.0")
        ]
        assert stalled, "a handler with stalled seconds > 0 on /metrics"
        release.set()
        eventually(
            lambda: get(manager.health_address, "/healthz")[0] == 200,
            WAIT,
            what="healthz green once the handler moves again",
        )
    finally:
        release.set()
        manager.stop(5)
