"""The informer over HTTP against the in-process API server: sync, ordering, late and slow handlers."""

from __future__ import annotations

import threading

import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually
from tests.support.informers import (
    EventLog,
    configmap,
    make_informer,
    seed,
    versions,
)

pytestmark = pytest.mark.timeout(90)


def _sync_2000(api_server, api_client, informers, **reflector_options):
    """An informer synced over 2,000 ConfigMaps, each announced once as an initial add; its requests."""
    seed(api_server, "configmaps", [configmap(f"cm-{i:04d}", data=str(i)) for i in range(2000)])
    api_server.clear_requests()
    informer = make_informer(api_client, CONFIGMAPS, reflector_options=reflector_options)
    informers.append(informer)
    log = EventLog()
    registration = informer.add_event_handler(log)
    informer.start()
    assert informer.wait_for_cache_sync(30)
    assert registration.has_synced()
    assert versions(informer.indexer.list()) == versions(api_server.objects("configmaps"))
    calls = log.snapshot()
    assert len(calls) == 2000 and all(c[0] == "add" and c[3] is True for c in calls)
    assert informer.last_sync_resource_version() == api_server.resource_version
    assert informer.lister.get("cm-0042", namespace="default")["data"] == {"data": "42"}
    return [r for r in api_server.requests if r.method == "GET" and r.path.endswith("/configmaps")]


def test_initial_sync_of_2000_objects_in_pages_of_100(api_server, api_client, informers):
    # The list path (use_watch_list=False, and the fallback for servers without streaming lists).
    requests = _sync_2000(api_server, api_client, informers, page_size=100, use_watch_list=False)
    lists = [r for r in requests if "watch" not in r.query]
    # The first list asks resourceVersion=0: the server answers from its watch cache, which (like
    # a real kube-apiserver's) ignores the limit. Had it paged, later pages would carry only
    # their continue token.
    assert lists[0].query.get("resourceVersion") == "0", [r.query for r in lists]
    assert all(r.query.get("limit") == "100" for r in lists)
    assert all("continue" in r.query and "resourceVersion" not in r.query for r in lists[1:])


def test_by_default_the_initial_sync_is_a_streaming_list(api_server, api_client, informers):
    requests = _sync_2000(api_server, api_client, informers)
    assert (
        requests[0].query.get("watch") == "true"
        and requests[0].query.get("sendInitialEvents") == "true"
    )
    assert all(r.query.get("watch") == "true" for r in requests)  # no list request at all


def test_changes_after_sync_reach_every_handler_in_order_per_key(api_server, api_client, informers):
    seed(api_server, "configmaps", [configmap(f"cm-{i}") for i in range(10)])
    informer = make_informer(api_client, CONFIGMAPS)
    informers.append(informer)
    logs = [EventLog() for _ in range(3)]
    for log in logs:
        informer.add_event_handler(log)
    informer.start()
    assert informer.wait_for_cache_sync(30)

    client = ResourceClient(api_client, CONFIGMAPS)
    written: dict[str, list[str]] = {f"default/cm-{i}": [] for i in range(12)}
    for round_ in range(5):
        for i in range(12):
            name = f"cm-{i}"
            if round_ == 0 and i >= 10:
                obj = client.create(configmap(name, v="0"), namespace="default")
            else:
                obj = client.patch(name, {"data": {"v": str(round_)}}, namespace="default")
            written[f"default/{name}"].append(obj["metadata"]["resourceVersion"])
    client.delete("cm-3", "default")

    final = versions(api_server.objects("configmaps"))
    eventually(lambda: versions(informer.indexer.list()) == final, what="cache == server")
    for log in logs:
        eventually(lambda: log.state() == final, what="handler state == server")
        for key, rvs in written.items():
            seen = [
                c[3] if c[0] == "update" else c[2]
                for c in log.per_key(key)
                if c[0] in ("add", "update")
            ]
            # The handler sees a subsequence of the writes (the FIFO may fold a burst into
            # one pop, but never reorders or skips the last one) in order.
            assert seen == sorted(seen, key=int), f"{key}: out of order {seen}"
            assert seen[-1] == rvs[-1]
        assert log.per_key("default/cm-3")[-1][0] == "delete"


def test_a_late_handler_gets_the_cache_as_adds_and_misses_nothing(
    api_server, api_client, informers
):
    seed(api_server, "configmaps", [configmap(f"cm-{i}") for i in range(200)])
    informer = make_informer(api_client, CONFIGMAPS)
    informers.append(informer)
    informer.start()
    assert informer.wait_for_cache_sync(30)

    client = ResourceClient(api_client, CONFIGMAPS)
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set() and i < 300:
            client.patch(f"cm-{i % 200}", {"data": {"n": str(i)}}, namespace="default")
            i += 1

    thread = threading.Thread(target=writer, name="test-writer", daemon=True)
    thread.start()
    late = EventLog()
    registration = informer.add_event_handler(late)
    thread.join(60)
    stop.set()
    assert not thread.is_alive()

    final = versions(api_server.objects("configmaps"))
    eventually(lambda: versions(informer.indexer.list()) == final, what="cache == server")
    eventually(
        lambda: registration.backlog() == 0 and late.state() == final, what="late handler == server"
    )
    assert registration.has_synced()
    initial = [c for c in late.snapshot() if c[0] == "add"]
    assert len(initial) == 200 and all(c[3] is True for c in initial)


def test_a_slow_handler_does_not_delay_a_fast_one(api_server, api_client, informers):
    informer = make_informer(api_client, CONFIGMAPS)
    informers.append(informer)
    gate = threading.Event()
    slow, fast = EventLog(delay=gate), EventLog()
    slow_registration = informer.add_event_handler(slow)
    informer.add_event_handler(fast)
    informer.start()
    assert informer.wait_for_cache_sync(30)

    client = ResourceClient(api_client, CONFIGMAPS)
    for i in range(100):
        client.create(configmap(f"cm-{i}"), namespace="default")
    try:
        eventually(lambda: len(fast.snapshot()) == 100, what="the fast handler to get all 100 adds")
        # The slow handler is stuck in its first call with the rest buffered.
        assert slow.snapshot() == []
        eventually(lambda: slow_registration.backlog() == 99, what="the slow handler's backlog")
    finally:
        gate.set()
    eventually(lambda: len(slow.snapshot()) == 100, what="the slow handler to catch up")
    assert slow_registration.backlog() == 0
