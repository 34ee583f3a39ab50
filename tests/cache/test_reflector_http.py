"""The Reflector over HTTP against the in-process API server: sync, resume, relist, back off, stall, stop."""

import random
import threading
import time

import pytest
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from pyinformers.api import ListWatch, ResourceClient
from pyinformers.cache import ReflectorOptions
from pyinformers.cache.reflector._reflector import Reflector
from pyinformers.cache.reflector._states import BackingOff, Watching
from pyinformers.clock import REAL_CLOCK, FakeClock
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually


class DictStore:
    """A thread-safe dict keyed like the cache, recording what the reflector did."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.objects: dict[str, dict] = {}
        self.replaces: list[str] = []

    @staticmethod
    def key(obj: dict) -> str:
        md = obj["metadata"]
        return f"{md.get('namespace')}/{md['name']}"

    def replace(self, objects, resource_version):
        with self.cond:
            self.objects = {self.key(o): o for o in objects}
            self.replaces.append(resource_version)
            self.cond.notify_all()

    def add(self, obj):
        with self.cond:
            self.objects[self.key(obj)] = obj
            self.cond.notify_all()

    update = add

    def delete(self, obj):
        with self.cond:
            self.objects.pop(self.key(obj), None)
            self.cond.notify_all()

    def resync(self):
        pass

    def wait(self, predicate, timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self), timeout), (
                f"store never matched: {sorted(self.objects)}"
            )

    def names(self) -> set[str]:
        return {k.split("/", 1)[1] for k in self.objects}


def server_names(api_server) -> set[str]:
    return {o["metadata"]["name"] for o in api_server.objects("configmaps", namespace="default")}


def cm(name: str) -> dict:
    return {"metadata": {"name": name}, "data": {"v": name}}


@pytest.fixture
def client(api_client):
    # No hidden urllib3 retries (they would sleep Retry-After inside a request): the
    # reflector's own backoff is what these tests observe.
    configuration = api_client.configuration
    configuration.retries = False
    plain = k8s.ApiClient(configuration)
    yield ResourceClient(plain, CONFIGMAPS)
    plain.close()


class Running:
    """A reflector running on a test thread; stopped (and checked stopped) on exit."""

    def __init__(self, client, store, **options) -> None:
        options.setdefault("metrics_registry", CollectorRegistry())
        options.setdefault("rng", random.Random(1))
        tunables = {
            k: options.pop(k) for k in list(options) if k in ReflectorOptions.__dataclass_fields__
        }
        self.reflector = Reflector(
            ListWatch(client, namespace="default"),
            store,
            name="test/configmaps",
            options=ReflectorOptions(**tunables),
            **options,
        )
        self.thread = threading.Thread(
            target=self.reflector.run, name="pyinformers-test-reflector", daemon=True
        )

    def __enter__(self) -> Reflector:
        self.thread.start()
        return self.reflector

    def __exit__(self, *exc) -> None:
        self.reflector.stop()
        self.thread.join(2)
        assert not self.thread.is_alive()


def requests_of(api_server, *, watch: bool) -> list:
    return [
        r
        for r in api_server.requests
        if r.method == "GET"
        and r.path.endswith("/configmaps")
        and (r.query.get("watch") == "true") == watch
    ]


def test_syncs_in_pages_and_follows_later_changes(api_server, client):
    for i in range(250):
        client.create(cm(f"c{i:03d}"), "default")
    store = DictStore()
    api_server.clear_requests()
    # The list path: use_watch_list=False, and the fallback for servers without streaming lists.
    with Running(client, store, page_size=100, use_watch_list=False) as reflector:
        store.wait(lambda s: len(s.objects) == 250)
        eventually(
            lambda: len(requests_of(api_server, watch=False)) >= 1
        )  # the log lags the answer a little
        lists = requests_of(api_server, watch=False)
        # The first list asks resourceVersion=0 (the watch cache, which ignores limit, as a real
        # kube-apiserver's does): one answer. Pages after it would carry only their continue token.
        assert lists[0].query.get("resourceVersion") == "0" and lists[0].query.get("limit") == "100"
        assert all("continue" in r.query and "resourceVersion" not in r.query for r in lists[1:])
        assert reflector.has_synced_once()
        client.create(cm("late"), "default")
        client.delete("c000", "default")
        client.patch("c001", {"data": {"v": "changed"}}, "default")
        store.wait(lambda s: "late" in s.names() and "c000" not in s.names())
        store.wait(lambda s: s.objects["default/c001"]["data"]["v"] == "changed")
    assert store.names() == server_names(api_server)


def test_a_dropped_watch_resumes_from_the_last_resource_version_without_relisting(
    api_server, client
):
    client.create(cm("a"), "default")
    store = DictStore()
    api_server.clear_requests()
    with Running(client, store, backoff_initial=0.05, backoff_max=0.1) as reflector:
        store.wait(lambda s: "a" in s.names())
        eventually(lambda: len(requests_of(api_server, watch=True)) == 1)
        rv_before_drop = client.create(cm("b"), "default")["metadata"]["resourceVersion"]
        store.wait(lambda s: "b" in s.names())
        # The reflector records an event's resourceVersion just after the store has the object.
        eventually(
            lambda: reflector.last_sync_resource_version() == rv_before_drop,
            what="b's resourceVersion",
        )
        assert api_server.faults.drop_watches() == 1
        client.create(cm("c"), "default")  # happens while the watch is down
        store.wait(lambda s: "c" in s.names())
        eventually(lambda: len(requests_of(api_server, watch=True)) >= 2)
        watches = requests_of(api_server, watch=True)
        assert len(watches) == 2
        assert watches[1].query["resourceVersion"] == rv_before_drop
        assert "sendInitialEvents" not in watches[1].query
        assert requests_of(api_server, watch=False) == []  # synced by a streaming list; no relist
        assert reflector.stats.relists == 0 and reflector.stats.restarts >= 1


def test_compaction_while_disconnected_ends_in_a_relist_that_drops_deleted_objects(
    api_server, client
):
    for name in ("keep", "doomed"):
        client.create(cm(name), "default")
    clock = FakeClock()
    store = DictStore()
    with Running(client, store, clock=clock) as reflector:
        store.wait(lambda s: s.names() == {"keep", "doomed"})
        clock.block_until_timers(1)  # the watch is open (its stall timer armed)
        api_server.faults.drop_watches()
        clock.block_until_waiters(1)  # backing off on the fake clock
        assert isinstance(reflector.state, BackingOff)
        client.delete("doomed", "default")
        client.create(cm("newcomer"), "default")
        api_server.compact()
        clock.step(reflector.state.delay)
        store.wait(lambda s: s.names() == {"keep", "newcomer"})
        assert len(store.replaces) == 2 and reflector.stats.relists == 1
    assert store.names() == server_names(api_server)


def test_server_errors_back_off_without_a_busy_loop(api_server, client):
    api_server.faults.error_rate = 1.0
    clock = FakeClock()
    store = DictStore()
    api_server.clear_requests()
    with Running(client, store, clock=clock, use_watch_list=False) as reflector:
        clock.block_until_waiters(1)  # the first list failed; now it waits on the clock
        assert len(requests_of(api_server, watch=False)) == 1  # logged before it was answered
        first = reflector.state
        assert isinstance(first, BackingOff) and 0.8 <= first.delay < 1.0
        clock.step(first.delay)  # wakes the wait (it is no longer counted when step returns) ...
        clock.block_until_waiters(
            1
        )  # ... so this is the next backoff, after the second list failed
        assert isinstance(reflector.state, BackingOff) and reflector.state != first
        assert len(requests_of(api_server, watch=False)) == 2  # logged before it was answered
        assert reflector.state.delay >= 1.6  # doubled
        api_server.faults.error_rate = 0.0
        clock.step(reflector.state.delay)
        clock.block_until_timers(1)  # listed, and watching: the watch's stall timer is armed
        assert reflector.has_synced_once() and reflector.stats.errors == 2


def test_throttling_waits_for_retry_after(api_server, client):
    api_server.faults.throttle_rate = 1.0
    api_server.faults.retry_after = 7
    clock = FakeClock()
    store = DictStore()
    api_server.clear_requests()
    with Running(client, store, clock=clock, use_watch_list=False) as reflector:
        clock.block_until_waiters(1)
        assert len(requests_of(api_server, watch=False)) == 1  # logged before it was answered
        state = reflector.state
        assert isinstance(state, BackingOff) and state.delay >= 7.0
        clock.step(6.5)
        clock.block_until_waiters(1)  # woke, found it early, waits again...
        assert len(requests_of(api_server, watch=False)) == 1  # ...without a second request
        api_server.faults.throttle_rate = 0.0
        clock.step(1.0)
        clock.block_until_timers(1)  # listed, and watching: the watch's stall timer is armed
        assert reflector.has_synced_once()


def test_a_stalled_watch_is_restarted(api_server, client):
    client.create(cm("a"), "default")
    clock = FakeClock()
    store = DictStore()
    api_server.clear_requests()
    with Running(client, store, clock=clock, stall_timeout=120) as reflector:
        store.wait(lambda s: "a" in s.names())
        # The server logs the watch before the reflector has it open: wait for the stall
        # timer, which the reflector arms on the fake clock as it opens the watch.
        clock.block_until_timers(1)
        api_server.faults.stall_watches = True
        clock.step(120)  # nothing (not even a bookmark) for the stall timeout: closed inside step()
        clock.block_until_waiters(1)  # the reflector backs off before re-watching
        assert reflector.stats.stalls == 1 and isinstance(reflector.state, BackingOff)
        api_server.faults.stall_watches = False
        clock.step(reflector.state.delay)
        clock.block_until_timers(1)  # the new watch is open (the stalled one's timer is gone)
        assert len(requests_of(api_server, watch=True)) == 2
        client.create(cm("b"), "default")
        store.wait(lambda s: "b" in s.names())
        assert reflector.stats.relists == 0


def test_by_default_a_streaming_list_syncs_without_a_list_request(api_server, client):
    for name in ("x", "y"):
        client.create(cm(name), "default")
    store = DictStore()
    api_server.clear_requests()
    with Running(client, store) as reflector:
        store.wait(lambda s: s.names() == {"x", "y"})
        assert reflector.has_synced_once() and reflector.stats.lists == 1
        client.create(cm("z"), "default")
        store.wait(lambda s: "z" in s.names())
        assert requests_of(api_server, watch=False) == []
        first = requests_of(api_server, watch=True)[0].query
        assert (
            first["sendInitialEvents"] == "true" and first["resourceVersionMatch"] == "NotOlderThan"
        )
        assert first["allowWatchBookmarks"] == "true" and "resourceVersion" not in first


class IgnoresInitialEvents(ListWatch):
    """A server that ignores sendInitialEvents: the watch goes out without it (rv unset: the
    server sends the current objects as ADDED events, and nothing marks their end). Without
    allowWatchBookmarks too: kube-apiserver 1.36 (and the embedded server) end the ADDED events
    of a watch without resourceVersion with the initial-events-end bookmark when bookmarks are
    allowed, even when sendInitialEvents is not asked."""

    def watch(self, **kwargs):
        kwargs["send_initial_events"] = kwargs["allow_bookmarks"] = False
        return super().watch(**kwargs)


def test_a_server_that_ignores_send_initial_events_is_listed_instead(api_server, client):
    for name in ("x", "y"):
        client.create(cm(name), "default")
    store = DictStore()
    errors: list = []
    api_server.clear_requests()
    reflector = Reflector(
        IgnoresInitialEvents(client, namespace="default"),
        store,
        name="test/configmaps",
        metrics_registry=CollectorRegistry(),
        options=ReflectorOptions(initial_events_timeout=0.3, on_watch_error=errors.append),
    )
    thread = threading.Thread(target=reflector.run, name="pyinformers-test-reflector", daemon=True)
    thread.start()
    try:
        store.wait(lambda s: s.names() == {"x", "y"})
        assert reflector.has_synced_once()
        assert (
            store.replaces and len(store.replaces) == 1
        )  # one replace: from the list, never a partial one
        lists = requests_of(api_server, watch=False)
        assert len(lists) == 1 and lists[0].query.get("resourceVersion") == "0"
        assert type(errors[0]).__name__ == "StreamingListUnsupported"
        client.create(cm("z"), "default")
        store.wait(lambda s: "z" in s.names())
    finally:
        reflector.stop()
        thread.join(2)
    assert not thread.is_alive()


def test_stop_with_an_open_watch_returns_within_a_second(api_server, client):
    store = DictStore()
    running = Running(client, store, clock=REAL_CLOCK)
    reflector = running.__enter__()
    eventually(
        lambda: (
            isinstance(reflector.state, Watching)
            and api_server.counters.get("watches_open", 0) >= 1
        )
    )
    started = time.monotonic()
    reflector.stop()
    running.thread.join(1.0)
    assert not running.thread.is_alive() and time.monotonic() - started < 1.0
