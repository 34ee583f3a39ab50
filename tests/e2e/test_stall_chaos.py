"""Over HTTP against the embedded server, with library defaults (issue 12, items 4 and 8).

* a chaos run whose watch stalls (the connection stays open, nothing comes)
  converges with no tuning: the default stall timeout re-opens the watch from
  the last resourceVersion, without a relist;
* watch connections have TCP keepalive on;
* the first list asks ``resourceVersion=0`` (the watch cache), a relist after
  410 asks a consistent read.

Time: the informer runs on a fake clock, stepped past the default stall
timeout, so the test takes seconds, not minutes.
"""

from __future__ import annotations

import random
import socket

import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.cache.reflector._reflector import DEFAULT_STALL_TIMEOUT
from pyinformers.clock import FakeClock
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually
from tests.support.informers import EventLog, configmap, make_informer, seed, versions

pytestmark = pytest.mark.timeout(120)


def _lists(server):
    return [
        r
        for r in server.requests
        if r.method == "GET"
        and r.path.endswith("/configmaps")
        and r.query.get("watch") not in ("true", "1")
    ]


def test_a_chaos_run_with_a_stalled_watch_converges_with_library_defaults(
    api_server, api_client, informers
):
    rng = random.Random(12)
    seed(
        api_server, "configmaps", [configmap(f"stall-{i}", namespace="default") for i in range(30)]
    )
    clock = FakeClock()
    informer = make_informer(
        api_client, CONFIGMAPS, namespace="default", clock=clock
    )  # no reflector options
    informers.append(informer)
    log = EventLog()
    informer.add_event_handler(log)
    informer.start()
    assert informer.wait_for_cache_sync(30)
    reflector = informer.reflector
    eventually(
        lambda: reflector.stats.watches >= 1 and api_server.counters.get("watches_open", 0) >= 1,
        what="the watch to open",
    )
    client = ResourceClient(api_client, CONFIGMAPS)
    try:
        for round_ in range(3):
            api_server.faults.stall_watches = True
            for i in rng.sample(range(30), 8):  # writes the stalled watch does not deliver
                client.patch(
                    f"stall-{i}",
                    {"data": {"round": str(round_), "r": str(rng.random())}},
                    namespace="default",
                )
            client.create(configmap(f"new-{round_}", namespace="default"))
            client.delete(f"stall-{round_}", namespace="default")
            stalls = reflector.stats.stalls

            def detected() -> bool:
                # The watch may still deliver a write or two before the server stalls it (each
                # resets the silence): step past the stall timeout until the reflector notices.
                if reflector.stats.stalls > stalls:
                    return True
                clock.step(DEFAULT_STALL_TIMEOUT + 1)
                return False

            eventually(detected, 30, what="the default stall detection")
            api_server.faults.stall_watches = False
            final = versions(api_server.objects("configmaps", namespace="default"))

            def converged() -> bool:
                if versions(informer.indexer.list()) == final:
                    return True
                clock.step(1.0)  # moves the backoff along (far below the stall timeout)
                return False

            eventually(converged, 30, what=f"the cache to converge after stall {round_}")
            eventually(lambda: log.state() == final, timeout=30, what="the handler to converge")
    finally:
        api_server.faults.reset()
    assert reflector.stats.stalls >= 3
    assert reflector.stats.relists == 0  # each restart resumed from the last resourceVersion
    assert informer.healthy(), informer.health_problem()


def test_watch_connections_have_tcp_keepalive(api_client):
    client = ResourceClient(api_client, CONFIGMAPS)
    stream = client.watch("default", timeout_seconds=5)
    try:
        response = stream._response
        sock = response.connection.sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
    finally:
        stream.close()


def test_the_first_list_reads_the_watch_cache_and_a_relist_after_410_reads_consistently(
    api_server, api_client, informers
):
    seed(api_server, "configmaps", [configmap(f"rv-{i}", namespace="default") for i in range(5)])
    before = len(_lists(api_server))
    # The list path (use_watch_list=False, and the fallback for servers without streaming lists).
    informer = make_informer(
        api_client,
        CONFIGMAPS,
        namespace="default",
        reflector_options={"backoff_initial": 0.02, "backoff_max": 0.2, "use_watch_list": False},
    )
    informers.append(informer)
    informer.start()
    assert informer.wait_for_cache_sync(30)
    eventually(lambda: informer.reflector.stats.watches >= 1, what="the watch")
    first = _lists(api_server)[before:]
    assert first[0].query.get("resourceVersion") == "0"
    # Disconnected while the history it would resume from is compacted away: 410, then a relist.
    api_server.faults.error_rate = 1.0
    api_server.faults.drop_watches()
    eventually(lambda: informer.reflector.stats.errors >= 1, what="the reflector to notice")
    rt = api_server.registry.find("configmaps", "")
    api_server.rest.create(rt, "default", configmap("rv-new"))
    api_server.compact()
    api_server.clear_requests()
    api_server.faults.reset()
    eventually(
        lambda: informer.reflector.stats.relists >= 1 and informer.reflector.stats.lists >= 2,
        what="a relist after the compaction",
    )
    relist = _lists(api_server)
    assert relist and "resourceVersion" not in relist[0].query, [r.query for r in relist]
