"""The informer under faults, over HTTP: dropped, compacted and stalled watches, 500s, 429s, shutdown."""

from __future__ import annotations

import copy
import threading
import time

import kubernetes.client
import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.cache import SharedInformerFactory
from pyinformers.clock import REAL_CLOCK, FakeClock
from pyinformers.resources import CONFIGMAPS, NAMESPACES, SECRETS
from pyinformers.testing import eventually
from tests.support.informers import (
    FAST_REFLECTOR,
    EventLog,
    configmap,
    make_informer,
    seed,
    versions,
)

pytestmark = pytest.mark.timeout(90)


def _lists(server):
    return [
        r
        for r in server.requests
        if r.method == "GET"
        and r.path.endswith("/configmaps")
        and r.query.get("watch") not in ("true", "1")
    ]


def _watches(server):
    return [
        r for r in server.requests if r.method == "GET" and r.query.get("watch") in ("true", "1")
    ]


def _start_synced(api_server, api_client, informers, n=20, **kwargs):
    seed(api_server, "configmaps", [configmap(f"cm-{i}") for i in range(n)])
    kwargs.setdefault("reflector_options", dict(FAST_REFLECTOR))
    informer = make_informer(api_client, CONFIGMAPS, **kwargs)
    informers.append(informer)
    log = EventLog()
    informer.add_event_handler(log)
    informer.start()
    assert informer.wait_for_cache_sync(30)
    eventually(lambda: api_server.counters.get("watches_open", 0) >= 1, what="the watch to open")
    return informer, log


def test_a_dropped_watch_resumes_from_the_last_resource_version_without_a_relist(
    api_server, api_client, informers
):
    informer, log = _start_synced(api_server, api_client, informers)
    client = ResourceClient(api_client, CONFIGMAPS)
    client.patch("cm-1", {"data": {"a": "1"}}, namespace="default")
    eventually(lambda: informer.last_sync_resource_version() == api_server.resource_version)
    last_rv = informer.last_sync_resource_version()
    api_server.clear_requests()

    assert api_server.faults.drop_watches() >= 1
    client.patch("cm-2", {"data": {"b": "2"}}, namespace="default")
    client.delete("cm-3", "default")
    final = versions(api_server.objects("configmaps"))
    eventually(
        lambda: versions(informer.indexer.list()) == final, what="cache == server after the drop"
    )
    eventually(lambda: log.state() == final)

    assert _lists(api_server) == [], "a dropped watch must not cause a relist"
    rewatch = _watches(api_server)[0]
    assert rewatch.query.get("resourceVersion") == last_rv
    assert informer.reflector.stats.relists == 0


def test_compaction_while_disconnected_ends_in_a_relist_with_tombstones(
    api_server, api_client, informers
):
    informer, log = _start_synced(api_server, api_client, informers)
    rt = api_server.registry.find("configmaps", "")
    # Keep the informer disconnected: every request fails, and its watch is cut.
    api_server.faults.error_rate = 1.0
    api_server.faults.drop_watches()
    eventually(lambda: informer.reflector.stats.errors >= 1, what="the reflector to notice")
    # Meanwhile (the server's own writers are not subject to faults): deletes, a create, compaction.
    for name in ("cm-4", "cm-5"):
        api_server.rest.delete(rt, "default", name, {})
    api_server.rest.create(rt, "default", configmap("cm-new"))
    api_server.compact()
    api_server.clear_requests()
    api_server.faults.reset()

    final = versions(api_server.objects("configmaps"))
    eventually(
        lambda: versions(informer.indexer.list()) == final, what="cache == server after the relist"
    )
    eventually(lambda: log.state() == final)
    assert ("tombstone", "default/cm-4") in log.snapshot()
    assert ("tombstone", "default/cm-5") in log.snapshot()
    relists = [w for w in _watches(api_server) if w.query.get("sendInitialEvents") == "true"]
    assert relists and "resourceVersion" not in relists[0].query, (
        "410 Gone must end in a relist (streaming)"
    )
    assert informer.reflector.stats.relists >= 1
    # The objects that did not change are not re-announced to handlers on the relist.
    assert [c for c in log.snapshot() if c[0] == "update"] == []


@pytest.mark.parametrize("fault", ["error", "throttle"])
def test_500_and_429_back_off_without_a_busy_loop(api_server, api_client, informers, fault):
    clock = FakeClock()
    # urllib3's default Retry obeys Retry-After on a 429 by sleeping inside the request, hidden
    # from the reflector; a client without automatic retries lets the reflector see every 429.
    configuration = copy.copy(api_client.configuration)
    configuration.retries = False
    api_client = kubernetes.client.ApiClient(configuration)
    informer, _ = _start_synced(
        api_server,
        api_client,
        informers,
        clock=clock,
        reflector_options={"backoff_initial": 0.8, "backoff_max": 30.0},
    )
    if fault == "error":
        api_server.faults.error_rate = 1.0
    else:
        api_server.faults.throttle_rate = 1.0
        api_server.faults.retry_after = 5
    api_server.clear_requests()
    api_server.faults.drop_watches()

    counts, delays = [], []
    for _ in range(5):
        # The reflector failed and waits on the (fake) clock: no time passes, so it must not retry.
        clock.block_until_waiters(1, timeout=10)
        counts.append(len(_watches(api_server)))
        deadline = clock.next_deadline()
        delays.append(deadline - clock.now())
        clock.set(deadline)  # the retry fails and the next turn finds the reflector waiting again
    # Exactly one request per backoff period. (The first wait may follow the dropped
    # watch itself rather than a failed request.)
    assert all(b - a == 1 for a, b in zip(counts, counts[1:])), f"requests per backoff: {counts}"
    if fault == "throttle":
        assert all(d >= 5 for d in delays[1:]), f"Retry-After not honoured: {delays}"
    else:
        assert delays[1] <= 2.5 and delays[-1] > 2 * delays[1], f"no exponential backoff: {delays}"
    api_server.faults.reset()
    client = ResourceClient(api_client, CONFIGMAPS)
    client.patch("cm-1", {"data": {"after": "faults"}}, namespace="default")
    final = versions(api_server.objects("configmaps"))
    while versions(informer.indexer.list()) != final:  # let backoff waits expire on the fake clock
        if clock.waiter_count():
            clock.set(clock.next_deadline())
        eventually(
            lambda: clock.waiter_count() or versions(informer.indexer.list()) == final,
            what="recovery after the faults",
        )
    assert informer.reflector.stats.relists == 0


def test_a_stalled_watch_is_restarted(api_server, api_client, informers):
    informer, log = _start_synced(
        api_server,
        api_client,
        informers,
        reflector_options=dict(FAST_REFLECTOR, stall_timeout=0.5),
    )
    api_server.faults.stall_watches = True
    client = ResourceClient(api_client, CONFIGMAPS)
    client.patch("cm-7", {"data": {"during": "stall"}}, namespace="default")
    eventually(lambda: informer.reflector.stats.stalls >= 1, what="the stall to be detected")
    api_server.faults.stall_watches = False
    final = versions(api_server.objects("configmaps"))
    eventually(
        lambda: versions(informer.indexer.list()) == final, what="the change made during the stall"
    )
    assert informer.reflector.stats.relists == 0


def test_shutdown_with_open_watches_finishes_within_a_second(api_server, api_client):
    seed(api_server, "configmaps", [configmap(f"cm-{i}") for i in range(10)])
    timers_before = REAL_CLOCK.timer_count()
    factory = SharedInformerFactory(
        api_client, metrics_registry=False, reflector_options=dict(FAST_REFLECTOR)
    )
    for resource in (CONFIGMAPS, SECRETS, NAMESPACES):
        factory.informer(resource).add_event_handler(EventLog())
    factory.start()
    assert factory.wait_for_cache_sync(30)
    assert factory.sync_status() == {CONFIGMAPS: True, SECRETS: True, NAMESPACES: True}
    eventually(lambda: api_server.counters.get("watches_open", 0) >= 3, what="three open watches")

    began = time.monotonic()
    assert factory.stop(timeout=5.0)
    elapsed = time.monotonic() - began
    assert elapsed < 1.0, f"shutdown took {elapsed:.2f}s"
    # The real clock's timer thread serves the process and idles out on its own; what the
    # informers must not leave behind are their timers (stall, stop poll).
    leftovers = [
        t.name
        for t in threading.enumerate()
        if t.name.startswith("pyinformers-")
        and not t.name.startswith(("pyinformers-apiserver", "pyinformers-clock-timers"))
    ]
    assert leftovers == []
    assert REAL_CLOCK.timer_count() == timers_before
