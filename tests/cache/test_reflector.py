"""Reflector state machine, driven step by step against a scripted lister-watcher (no server)."""

from __future__ import annotations

import gc
import random
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from pyinformers._gc_policy import gc_paused
from pyinformers.api import BadRequest, Gone, NotFound, ServerError, TooManyRequests, WatchEvent
from pyinformers.api._client import ListPage
from pyinformers.cache import ReflectorOptions
from pyinformers.cache.reflector._reflector import (
    INITIAL_EVENTS_END_ANNOTATION,
    Reflector,
    StreamingListUnsupported,
)
from pyinformers.cache.reflector._states import (
    BackingOff,
    Listing,
    NeedList,
    Stopped,
    Watching,
    WatchListing,
)
from pyinformers.clock import FakeClock
from pyinformers.testing import ScriptedListerWatcher, ScriptedWatch, eventually

# --------------------------------------------------------------------------- fakes

JOIN = 10.0  # real seconds a test waits for another thread before it fails

# The scripted lister-watcher moved to pyinformers.testing; the old names stay for branches in flight.
ScriptedLW, FakeStream = ScriptedListerWatcher, ScriptedWatch


def pod(name: str, rv: str, ns: str = "default") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
    }


def bookmark(rv: str, *, initial_end: bool = False) -> WatchEvent:
    md: dict = {"resourceVersion": rv}
    if initial_end:
        md["annotations"] = {INITIAL_EVENTS_END_ANNOTATION: "true"}
    return WatchEvent("BOOKMARK", {"kind": "Pod", "apiVersion": "v1", "metadata": md})


class RecordingStore:
    def __init__(self) -> None:
        self.ops: list[tuple] = []
        self.resyncs = 0

    def replace(self, objects, resource_version):
        self.ops.append(("replace", [o["metadata"]["name"] for o in objects], resource_version))

    def add(self, obj):
        self.ops.append(("add", obj["metadata"]["name"]))

    def update(self, obj):
        self.ops.append(("update", obj["metadata"]["name"]))

    def delete(self, obj):
        self.ops.append(("delete", obj["metadata"]["name"]))

    def resync(self):
        self.resyncs += 1


def make(lw, store=None, **options) -> tuple[Reflector, RecordingStore, FakeClock]:
    clock = options.pop("clock", None) or FakeClock()
    store = store or RecordingStore()
    options.setdefault("metrics_registry", CollectorRegistry())
    options.setdefault("rng", random.Random(7))
    tunables = {
        k: options.pop(k) for k in list(options) if k in ReflectorOptions.__dataclass_fields__
    }
    reflector = Reflector(
        lw, store, name="test/pods", clock=clock, options=ReflectorOptions(**tunables), **options
    )
    return reflector, store, clock


def synced(lw: ScriptedListerWatcher, **options):
    """A reflector that has listed one page (rv 10) and is about to watch."""
    lw.lists.appendleft(ListPage([pod("a", "5")], "10"))
    reflector, store, clock = make(lw, **options)
    assert reflector.step() == Listing(None, resource_version="0")
    assert reflector.step() == Watching("10")
    return reflector, store, clock


# --------------------------------------------------------------------------- listing


def test_lists_in_pages_then_replaces_once_and_watches_from_the_list_resource_version():
    lw = ScriptedListerWatcher(
        lists=[
            ListPage([pod("a", "1"), pod("b", "2")], "9", "tok1"),
            ListPage([pod("c", "3")], "9", None),
        ]
    )
    reflector, store, _ = make(lw, page_size=2)
    assert reflector.state == NeedList()
    assert reflector.step() == Listing(None, resource_version="0")
    assert reflector.step() == Listing("tok1", resource_version="0")
    assert store.ops == []  # nothing reaches the store before the last page
    assert reflector.step() == Watching("9")
    assert store.ops == [("replace", ["a", "b", "c"], "9")]
    assert [c["limit"] for c in lw.list_calls()] == [2, 2]
    assert [c["continue_"] for c in lw.list_calls()] == [None, "tok1"]
    # The first page asks the watch cache (resourceVersion=0); later pages carry their snapshot
    # in the continue token and must not name a resourceVersion.
    assert [c["resource_version"] for c in lw.list_calls()] == ["0", None]
    assert reflector.has_synced_once()
    assert reflector.last_sync_resource_version() == "9"
    assert reflector.stats.lists == 1


def test_an_expired_continue_token_restarts_with_one_unpaged_list():
    lw = ScriptedListerWatcher(
        lists=[
            ListPage([pod("a", "1")], "9", "tok1"),
            Gone("continue expired", reason="Expired"),
            ListPage([pod("a", "1"), pod("b", "12")], "12"),
        ]
    )
    reflector, store, _ = make(lw, page_size=1)
    reflector.step()
    reflector.step()
    assert reflector.step() == Listing(None, paged=False)
    assert reflector.step() == Watching("12")
    assert lw.list_calls()[-1]["limit"] is None
    assert (
        lw.list_calls()[-1]["resource_version"] is None
    )  # the snapshot is gone: a consistent read
    assert store.ops == [("replace", ["a", "b"], "12")]  # page one is not kept twice
    assert reflector.stats.relists == 1


def test_a_failed_list_page_is_retried_after_a_backoff():
    lw = ScriptedListerWatcher(
        lists=[
            ListPage([pod("a", "1")], "9", "tok1"),
            ServerError("boom"),
            ListPage([pod("b", "2")], "9"),
        ]
    )
    reflector, store, clock = make(lw, page_size=1)
    reflector.step()
    reflector.step()
    state = reflector.step()
    assert isinstance(state, BackingOff) and state.then == Listing("tok1", resource_version="0")
    assert 0.8 <= state.delay <= 0.96
    clock.step(state.delay)
    assert reflector.step() == Listing("tok1", resource_version="0")
    assert reflector.step() == Watching("9")
    assert store.ops == [("replace", ["a", "b"], "9")]
    assert reflector.stats.errors == 1


def test_list_throttled_with_retry_after_waits_at_least_that_long():
    lw = ScriptedListerWatcher(lists=[TooManyRequests("slow down", retry_after=7.0)])
    reflector, _, _ = make(lw)
    reflector.step()
    state = reflector.step()
    assert isinstance(state, BackingOff) and state.delay == 7.0


# --------------------------------------------------------------------------- watching


def test_watch_events_reach_the_store_and_bookmarks_advance_the_resource_version():
    stream = ScriptedWatch(
        [
            WatchEvent("ADDED", pod("b", "11")),
            WatchEvent("MODIFIED", pod("a", "12")),
            WatchEvent("DELETED", pod("b", "13")),
            bookmark("20"),
        ]
    )
    lw = ScriptedListerWatcher(watches=[stream])
    reflector, store, _ = synced(lw)
    assert reflector.step() == Watching(
        "20"
    )  # a healthy watch that closed normally: re-watch at once
    assert store.ops[1:] == [("add", "b"), ("update", "a"), ("delete", "b")]
    assert reflector.last_sync_resource_version() == "20"
    assert reflector.stats.events == 3 and reflector.stats.bookmarks == 1
    call = lw.watch_calls()[0]
    assert call["resource_version"] == "10" and call["allow_bookmarks"] is True
    assert stream.closed.is_set()


class SeeingStore(RecordingStore):
    """Records, at each store call, what the reflector reports (as another thread reading it would see it)."""

    reflector: Reflector

    def _seen(self, op, rv):
        r = self.reflector
        self.ops.append(
            (
                op,
                rv,
                r.last_sync_resource_version(),
                r.has_synced_once(),
                r.stats.lists,
                r.stats.events,
            )
        )

    def replace(self, objects, resource_version):
        self._seen("replace", resource_version)

    def add(self, obj):
        self._seen("add", obj["metadata"]["resourceVersion"])

    def update(self, obj):
        self._seen("update", obj["metadata"]["resourceVersion"])

    def delete(self, obj):
        self._seen("delete", obj["metadata"]["resourceVersion"])


@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "streaming-list"])
def test_the_resource_version_and_counts_are_recorded_before_the_store_gets_the_change(watch_list):
    """A reader who sees a change in the store (an informer that synced) never finds the reflector behind it."""
    events = [
        WatchEvent("ADDED", pod("b", "11")),
        WatchEvent("MODIFIED", pod("a", "12")),
        WatchEvent("DELETED", pod("b", "13")),
    ]
    if watch_list:
        lw = ScriptedListerWatcher(
            watches=[
                ScriptedWatch(
                    [WatchEvent("ADDED", pod("a", "5")), bookmark("10", initial_end=True), *events]
                )
            ],
            watch_list=True,
        )
    else:
        lw = ScriptedListerWatcher(
            lists=[ListPage([pod("a", "5")], "10")], watches=[ScriptedWatch(events)]
        )
    store = SeeingStore()
    reflector, _, _ = make(lw, store=store)
    store.reflector = reflector
    while not isinstance(reflector.step(), Watching) or not lw.watch_calls():
        pass
    assert store.ops == [
        ("replace", "10", "10", True, 1, 0),
        ("add", "11", "11", True, 1, 1),
        ("update", "12", "12", True, 1, 2),
        ("delete", "13", "13", True, 1, 3),
    ]


def test_each_watch_asks_for_a_random_server_timeout_within_the_bounds():
    lw = ScriptedListerWatcher(watches=[ScriptedWatch([bookmark("11")]) for _ in range(20)])
    reflector, _, _ = synced(lw, min_watch_timeout=300, max_watch_timeout=600)
    for _ in range(20):
        reflector.step()
    timeouts = [c["timeout_seconds"] for c in lw.watch_calls()]
    assert all(300 <= t <= 600 for t in timeouts)
    assert len(set(timeouts)) > 1


def test_a_network_error_backs_off_then_rewatches_from_the_last_resource_version():
    lw = ScriptedListerWatcher(
        watches=[
            ScriptedWatch(
                [WatchEvent("ADDED", pod("b", "11"))], error=ConnectionResetError("reset")
            ),
            ScriptedWatch(),
        ]
    )
    reflector, store, clock = synced(lw)
    state = reflector.step()
    assert isinstance(state, BackingOff) and state.then == Watching("11")
    assert 0.8 <= state.delay <= 0.96
    clock.step(state.delay)
    assert reflector.step() == Watching("11")
    reflector.step()
    assert lw.watch_calls()[1]["resource_version"] == "11"
    assert reflector.stats.relists == 0 and reflector.stats.lists == 1  # no relist
    assert reflector.stats.restarts >= 1


def test_consecutive_watch_failures_double_the_backoff_up_to_the_maximum():
    lw = ScriptedListerWatcher(watches=[ServerError("down")] * 12)
    reflector, _, clock = synced(lw, backoff_max=30.0)
    delays = []
    for _ in range(12):
        state = reflector.step()
        assert isinstance(state, BackingOff)
        delays.append(state.delay)
        clock.step(state.delay)
        assert reflector.step() == Watching("10")
    assert delays[0] < 1.0 and 1.6 <= delays[1] < 2.0 and 3.2 <= delays[2] < 3.9
    assert max(delays) == 30.0
    assert all(b >= a for a, b in zip(delays, delays[1:]))


def test_gone_inside_the_watch_stream_relists():
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "30")], "30")],
        watches=[
            ScriptedWatch(
                [WatchEvent("ADDED", pod("b", "11"))], error=Gone("too old", reason="Expired")
            )
        ],
    )
    reflector, store, _ = synced(lw)
    assert reflector.step() == NeedList(consistent=True)
    assert reflector.step() == Listing(None)
    assert reflector.step() == Watching("30")
    assert store.ops[-1] == ("replace", ["a"], "30")
    # The first list read the watch cache; the relist after 410 must not go back in time.
    assert [c["resource_version"] for c in lw.list_calls()] == ["0", None]
    assert reflector.stats.relists == 1 and reflector.stats.lists == 2


def test_gone_when_opening_the_watch_relists():
    lw = ScriptedListerWatcher(watches=[Gone("too old", reason="Gone")])
    reflector, _, _ = synced(lw)
    assert reflector.step() == NeedList(consistent=True)
    assert reflector.stats.relists == 1


def test_a_second_410_right_after_a_relist_backs_off_before_listing_again():
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "20")], "20"), ListPage([pod("a", "30")], "30")],
        watches=[Gone("old"), Gone("old again"), ScriptedWatch([bookmark("31")]), Gone("later")],
    )
    reflector, _, clock = synced(lw)
    assert reflector.step() == NeedList(consistent=True)  # the first relist is immediate
    reflector.step()
    assert reflector.step() == Watching("20")
    state = reflector.step()  # gone again before anything arrived
    assert isinstance(state, BackingOff) and state.then == NeedList(consistent=True)
    clock.step(state.delay)
    reflector.step()
    reflector.step()
    assert reflector.step() == Watching("30")
    assert reflector.step() == Watching("31")  # this watch delivered something...
    assert reflector.step() == NeedList(consistent=True)  # ...so the next 410 relists at once
    assert reflector.stats.relists == 3


def test_a_throttled_watch_waits_at_least_retry_after():
    lw = ScriptedListerWatcher(watches=[TooManyRequests("slow", retry_after=12.0)])
    reflector, _, _ = synced(lw)
    state = reflector.step()
    assert isinstance(state, BackingOff) and state.delay == 12.0 and state.then == Watching("10")


def test_a_watch_that_closes_at_once_with_nothing_is_backed_off_not_hammered():
    lw = ScriptedListerWatcher(watches=[ScriptedWatch(), ScriptedWatch()])
    reflector, _, _ = synced(lw)
    state = reflector.step()
    assert isinstance(state, BackingOff) and state.then == Watching("10")


def test_an_unknown_event_type_is_ignored():
    lw = ScriptedListerWatcher(
        watches=[
            ScriptedWatch(
                [WatchEvent("WEIRD", pod("x", "11")), WatchEvent("ADDED", pod("y", "12"))]
            )
        ]
    )
    reflector, store, _ = synced(lw)
    assert reflector.step() == Watching("12")
    assert store.ops[1:] == [("add", "y")]


# --------------------------------------------------------------------------- streaming list


def test_a_streaming_list_is_the_default_unless_the_lister_watcher_opts_out():
    streaming = ScriptedListerWatcher(watch_list=True)
    assert make(streaming)[0].state == WatchListing()  # no option: the streaming list
    assert make(streaming, use_watch_list=False)[0].state == NeedList()
    # A lister-watcher that cannot stream (a scripted fake by default) is listed.
    assert make(ScriptedListerWatcher())[0].state == NeedList()


def test_a_streaming_list_collects_the_initial_events_then_replaces_and_keeps_watching():
    stream = ScriptedWatch(
        [
            WatchEvent("ADDED", pod("a", "3")),
            WatchEvent("ADDED", pod("b", "4")),
            # Changes made after the list's snapshot may come before the end bookmark.
            WatchEvent("DELETED", pod("a", "5")),
            WatchEvent("ADDED", pod("c", "6")),
            bookmark("8", initial_end=True),
            WatchEvent("MODIFIED", pod("b", "9")),
        ]
    )
    lw = ScriptedListerWatcher(watches=[stream], watch_list=True)
    reflector, store, _ = make(lw)
    assert reflector.state == WatchListing()
    assert not reflector.has_synced_once()
    assert reflector.step() == Watching("9")
    assert store.ops == [("replace", ["b", "c"], "8"), ("update", "b")]
    assert lw.watch_calls()[0]["send_initial_events"] is True
    assert lw.watch_calls()[0]["resource_version"] is None
    assert reflector.has_synced_once() and reflector.stats.lists == 1
    assert lw.list_calls() == []


def test_a_streaming_list_transforms_each_object_as_it_is_decoded():
    seen = []

    def transform(obj):
        seen.append((obj["metadata"]["name"], len(store.ops)))  # the store has nothing yet
        obj["metadata"].pop("managedFields", None)
        return obj

    first, second = pod("a", "3"), pod("b", "4")
    first["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    lw = ScriptedListerWatcher(
        watches=[
            ScriptedWatch(
                [
                    WatchEvent("ADDED", first),
                    WatchEvent("ADDED", second),
                    bookmark("5", initial_end=True),
                ]
            )
        ],
        watch_list=True,
    )
    store = RecordingStore()
    reflector, _, _ = make(lw, store=store, list_transform=transform)
    assert reflector.step() == Watching("5")
    assert seen == [("a", 0), ("b", 0)]
    assert "managedFields" not in first["metadata"]


class GcProbe:
    """A watch stream that notes, as each event is read, whether the cyclic GC is enabled."""

    def __init__(self, events) -> None:
        self.events = events
        self.gc_enabled: list[bool] = []

    def __iter__(self):
        for event in self.events:
            self.gc_enabled.append(gc.isenabled())
            yield event
        self.gc_enabled.append(gc.isenabled())

    def close(self) -> None:
        pass


def test_the_cyclic_gc_is_paused_while_the_initial_events_arrive_and_restored_after():
    assert gc.isenabled()
    probe = GcProbe(
        [
            WatchEvent("ADDED", pod("a", "3")),
            WatchEvent("ADDED", pod("b", "4")),
            bookmark("5", initial_end=True),
            WatchEvent("MODIFIED", pod("a", "6")),
        ]
    )
    reflector, _, _ = make(ScriptedListerWatcher(watches=[probe], watch_list=True))
    assert reflector.step() == Watching("6")
    # Read before: the first event (the watch just opened), the second, the end bookmark;
    # after the end bookmark the collector runs again.
    assert probe.gc_enabled == [False, False, False, True, True]
    assert gc.isenabled()


def test_a_streaming_list_falls_back_to_a_list_for_good_when_the_server_rejects_it():
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "1")], "5"), ListPage([pod("a", "1")], "7")],
        watches=[BadRequest("sendInitialEvents is not supported"), Gone("old")],
        watch_list=True,
    )
    reflector, store, _ = make(lw)
    assert reflector.step() == NeedList()
    assert reflector.step() == Listing(
        None, resource_version="0"
    )  # the fallback reads the watch cache
    assert reflector.step() == Watching("5")
    assert reflector.step() == NeedList(consistent=True)  # after a 410 it stays on lists
    assert store.ops[0] == ("replace", ["a"], "5")


def test_a_404_or_403_on_the_streaming_list_lists_this_time_only():
    lw = ScriptedListerWatcher(
        lists=[ListPage([], "5")], watches=[NotFound("no such CRD"), Gone("old")], watch_list=True
    )
    reflector, _, _ = make(lw)
    assert reflector.step() == NeedList()  # the list says what is missing, with its hint
    reflector.step()
    assert reflector.step() == Watching("5")
    assert reflector.step() == WatchListing()  # a relist streams again


def test_a_server_that_ignores_send_initial_events_is_listed_this_time():
    # It sends the objects as ADDED events and then a plain bookmark: never the end bookmark.
    ignoring = ScriptedWatch([WatchEvent("ADDED", pod("a", "3")), bookmark("9")], block=True)
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "3")], "9"), ListPage([], "12")],
        watches=[ignoring, Gone("old")],
        watch_list=True,
    )
    errors: list = []
    reflector, store, _ = make(lw, on_watch_error=errors.append)
    assert reflector.step() == NeedList()
    assert ignoring.closed.is_set()
    assert (
        store.ops == [] and not reflector.has_synced_once()
    )  # nothing half-listed reached the store
    assert isinstance(errors[0], StreamingListUnsupported)
    reflector.step()
    assert reflector.step() == Watching("9")
    assert store.ops == [("replace", ["a"], "9")] and reflector.has_synced_once()
    assert reflector.step() == WatchListing()  # after a 410 it tries a streaming list again


def test_a_streaming_list_that_ends_before_the_end_bookmark_lists_this_time():
    lw = ScriptedListerWatcher(
        lists=[ListPage([], "5")],
        watches=[ScriptedWatch([WatchEvent("ADDED", pod("a", "3"))]), Gone("old")],
        watch_list=True,
    )
    reflector, store, _ = make(lw)
    assert reflector.step() == NeedList()
    assert store.ops == [] and not reflector.has_synced_once()
    reflector.step()
    assert reflector.step() == Watching("5")
    assert reflector.step() == WatchListing()  # not for good: a relist streams again


def test_a_410_to_a_streaming_list_lists_this_time_instead_of_relisting_in_a_loop():
    # A streaming list asks no resourceVersion: a server that answers 410 to it does not stream.
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "3")], "5")], watches=[Gone("old")], watch_list=True
    )
    reflector, store, _ = make(lw)
    assert reflector.step() == NeedList()
    reflector.step()
    assert reflector.step() == Watching("5")
    assert store.ops == [("replace", ["a"], "5")] and reflector.stats.relists == 0


def test_a_network_error_during_the_initial_events_retries_the_streaming_list():
    lw = ScriptedListerWatcher(
        watches=[
            ScriptedWatch([WatchEvent("ADDED", pod("a", "3"))], error=ConnectionError("reset"))
        ],
        watch_list=True,
    )
    reflector, store, _ = make(lw)
    state = reflector.step()
    assert isinstance(state, BackingOff) and state.then == WatchListing()
    assert store.ops == []


def test_a_silent_streaming_list_without_its_end_bookmark_is_given_up_for_a_list():
    # A server that ignores sendInitialEvents and sends no bookmarks: the objects, then silence.
    silent = ScriptedWatch([WatchEvent("ADDED", pod("a", "3"))], block=True)
    listed_watch = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "3")], "9")], watches=[silent, listed_watch], watch_list=True
    )
    reflector, store, clock = make(lw, initial_events_timeout=10)
    with Running(reflector):
        assert silent.blocking.wait(JOIN)
        clock.step(9.9)
        assert not silent.closed.is_set() and not reflector.has_synced_once()
        clock.step(0.1)  # the initial-events timer ran inside step(): the stream is closed
        assert silent.closed.is_set()
        assert listed_watch.blocking.wait(JOIN)  # then a list, and a watch from its resourceVersion
        assert store.ops == [("replace", ["a"], "9")] and reflector.has_synced_once()
        assert lw.list_calls()[0]["resource_version"] == "0"
        assert lw.watch_calls()[1]["resource_version"] == "9"


def test_a_long_streaming_list_that_keeps_coming_is_not_cut():
    watch = GatedWatch(initial=True)
    lw = ScriptedListerWatcher(watches=[watch], watch_list=True)
    reflector, store, clock = make(lw, initial_events_timeout=10)
    with Running(reflector):
        clock.block_until_timers(2)  # the stall and the initial-events timers
        clock.step(8)
        watch.gate.set()
        assert watch.spoke.wait(JOIN)  # an object at +8 s
        clock.step(8)  # the timer fires at +10 s, finds the stream spoke 2 s ago: re-armed
        assert not watch.closed.is_set()
        watch.finish.set()
        eventually(lambda: reflector.has_synced_once(), JOIN, what="the end bookmark")
        assert store.ops == [("replace", ["a"], "11")]
        assert clock.timer_count() == 1  # only the stall timer is left


# --------------------------------------------------------------------------- errors, health, metrics


def test_on_watch_error_sees_every_error_and_a_failing_callback_is_contained():
    seen = []

    def callback(error):
        seen.append(error)
        raise RuntimeError("callback bug")

    errors = [ServerError("a"), ConnectionError("b")]
    lw = ScriptedListerWatcher(watches=list(errors))
    reflector, _, clock = synced(lw, on_watch_error=callback)
    for _ in errors:
        state = reflector.step()
        clock.step(state.delay)
        reflector.step()
    assert seen == errors


def test_healthy_turns_false_after_repeated_failures_and_back_after_a_good_watch():
    lw = ScriptedListerWatcher(watches=[ServerError("x")] * 3 + [ScriptedWatch([bookmark("11")])])
    reflector, _, clock = synced(lw)
    assert reflector.healthy()
    for _ in range(3):
        state = reflector.step()
        clock.step(state.delay)
        reflector.step()
    assert not reflector.healthy()
    reflector.step()
    assert reflector.healthy()


def test_counters_are_exposed_as_prometheus_metrics():
    registry = CollectorRegistry()
    lw = ScriptedListerWatcher(
        watches=[ScriptedWatch([WatchEvent("ADDED", pod("b", "11")), bookmark("12")])]
    )
    reflector, _, _ = synced(lw, metrics_registry=registry)
    reflector.step()
    labels = {"name": "test/pods"}
    assert registry.get_sample_value("pyinformers_reflector_lists_total", labels) == 1
    assert registry.get_sample_value("pyinformers_reflector_watches_total", labels) == 1
    assert registry.get_sample_value("pyinformers_reflector_watch_events_total", labels) == 1
    assert registry.get_sample_value("pyinformers_reflector_bookmarks_total", labels) == 1
    assert registry.get_sample_value("pyinformers_reflector_healthy", labels) == 1
    assert registry.get_sample_value("pyinformers_reflector_last_sync_age_seconds", labels) == 0
    make(
        ScriptedListerWatcher(), metrics_registry=registry
    )  # a second reflector on one registry: no clash


def test_metrics_registry_false_records_nothing_but_stats_still_count():
    lw = ScriptedListerWatcher(watches=[ScriptedWatch([WatchEvent("ADDED", pod("b", "11"))])])
    reflector, _, _ = synced(lw, metrics_registry=False)
    reflector.step()
    assert reflector.stats.events == 1


# --------------------------------------------------------------------------- resync


class Running:
    """``reflector.run()`` on a thread for the length of a ``with`` block; stopped and joined after it."""

    def __init__(self, reflector: Reflector, stop: threading.Event | None = None) -> None:
        self.reflector = reflector
        self.thread = threading.Thread(
            target=reflector.run, args=(stop,), name="pyinformers-test-reflector", daemon=True
        )

    def __enter__(self) -> Reflector:
        self.thread.start()
        return self.reflector

    def __exit__(self, *exc) -> None:
        self.reflector.stop()
        self.thread.join(5)
        assert not self.thread.is_alive(), "run() did not return after stop()"


def test_resync_runs_every_period_after_sync_when_should_resync_agrees():
    allow = [True]
    watch = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([pod("a", "5")], "10")], watches=[watch])
    reflector, store, clock = make(
        lw, resync_period=30, should_resync=lambda: allow[0], stall_timeout=None
    )
    with Running(reflector):
        assert watch.blocking.wait(5)  # listed (synced) and watching
        clock.step(29.9)
        assert reflector.stats.resyncs == 0
        for n in (1, 2):  # the timer fires inside step(); the resync runs on its own short thread
            clock.step(0.1 if n == 1 else 30)
            eventually(lambda: store.resyncs == n, what=f"resync {n}")
        allow[0] = False
        clock.step(30)
        assert clock.timer_count() == 1  # the timer went on ...
    assert (
        store.resyncs == 2 and reflector.stats.resyncs == 2
    )  # ... and run() waited for its last resync
    assert clock.timer_count() == 0  # run() cancelled its timers


def test_periods_that_pass_during_a_slow_resync_make_one_more_pass_not_more_threads():
    class SlowStore(RecordingStore):
        def __init__(self):
            super().__init__()
            self.entered = threading.Semaphore(0)
            self.release = threading.Event()

        def resync(self):
            super().resync()
            self.entered.release()
            assert self.release.wait(JOIN)

    watch = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([pod("a", "5")], "10")], watches=[watch])
    store = SlowStore()
    reflector, _, clock = make(lw, store=store, resync_period=10, stall_timeout=None)
    with Running(reflector):
        assert watch.blocking.wait(JOIN)
        clock.step(10)
        assert store.entered.acquire(timeout=JOIN)  # the first resync is running ...
        clock.step(30)  # ... while three more periods pass
        threads = [t for t in threading.enumerate() if t.name.endswith("-resync")]
        assert len(threads) == 1
        store.release.set()
        assert store.entered.acquire(timeout=JOIN)  # one more pass for the three periods
        eventually(lambda: reflector.stats.resyncs == 2, what="both passes")
    assert (
        store.resyncs == 2 and reflector.stats.resyncs == 2
    )  # run() joined the resync thread: no third


def test_no_resync_before_the_first_list():
    lw = ScriptedListerWatcher(lists=[ServerError("down")])
    reflector, store, clock = make(lw, resync_period=5, backoff_initial=100, backoff_max=100)
    with Running(reflector):
        clock.block_until_waiters(1)  # backing off from the failed list
        clock.step(50)
        assert store.resyncs == 0 and reflector.stats.resyncs == 0


# --------------------------------------------------------------------------- threads: stop and stall


def test_stop_returns_at_once_and_run_ends_promptly_even_while_a_watch_is_blocked():
    stream = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([], "3")], watches=[stream])
    reflector, _, _ = make(lw)
    runner = threading.Thread(target=reflector.run, name="pyinformers-test-reflector", daemon=True)
    runner.start()
    assert stream.blocking.wait(5)
    started = time.monotonic()
    reflector.stop()
    runner.join(1.0)
    assert not runner.is_alive() and time.monotonic() - started < 1.0
    assert reflector.state == Stopped()
    assert stream.closed.is_set()


def test_setting_the_run_stop_event_closes_a_blocked_watch():
    stream = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([], "3")], watches=[stream])
    reflector, _, _ = make(
        lw
    )  # the stop event is polled on the real clock, whatever the reflector's
    stop = threading.Event()
    runner = threading.Thread(
        target=reflector.run, args=(stop,), name="pyinformers-test-reflector", daemon=True
    )
    runner.start()
    assert stream.blocking.wait(5)
    stop.set()
    runner.join(1.0)
    assert not runner.is_alive()


def test_stop_wakes_a_backoff_wait():
    lw = ScriptedListerWatcher(lists=[ServerError("down")])
    reflector, _, clock = make(lw)
    runner = threading.Thread(target=reflector.run, name="pyinformers-test-reflector", daemon=True)
    runner.start()
    clock.block_until_waiters(1)
    reflector.stop()
    runner.join(1.0)
    assert not runner.is_alive()


def test_a_stalled_watch_is_closed_and_reopened_from_the_same_resource_version():
    first = ScriptedWatch([bookmark("11")], block=True)
    second = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([], "10")], watches=[first, second])
    reflector, _, clock = make(lw, stall_timeout=60)
    with Running(reflector):
        assert first.blocking.wait(5)
        assert clock.timer_count() == 1  # the stall timer, armed as the watch opened
        clock.step(59.9)
        assert not first.closed.is_set()  # not yet silent long enough
        clock.step(0.1)  # the stall timer ran inside step(): the watch is closed already
        assert first.closed.is_set()
        clock.block_until_waiters(1)  # the reflector backs off before re-watching
        assert isinstance(reflector.state, BackingOff)
        clock.step(reflector.state.delay)
        assert second.blocking.wait(5)
        assert lw.watch_calls()[1]["resource_version"] == "11"
        assert reflector.stats.stalls == 1 and reflector.stats.relists == 0
        assert clock.timer_count() == 1  # the first watch's timer is gone, the second's armed


class GatedWatch:
    """A watch that says one bookmark when the test opens ``gate``, then nothing until closed.

    ``initial``: a streaming list's stream, which says an ADDED object at the gate instead,
    and its end bookmark once the test sets ``finish``.
    """

    def __init__(self, *, initial: bool = False) -> None:
        self.initial = initial
        self.gate = threading.Event()
        self.finish = threading.Event()
        self.spoke = threading.Event()  # set once the reflector has taken the event in
        self.closed = threading.Event()

    def __iter__(self):
        if self.gate.wait(JOIN) and not self.closed.is_set():
            yield WatchEvent("ADDED", pod("a", "3")) if self.initial else bookmark("11")
            self.spoke.set()  # the reader asked for more: it has handled the event
        if self.initial and self.finish.wait(JOIN) and not self.closed.is_set():
            yield bookmark("11", initial_end=True)
        self.closed.wait(JOIN)

    def close(self) -> None:
        self.closed.set()


def test_an_event_pushes_the_stall_deadline_back():
    watch = GatedWatch()
    lw = ScriptedListerWatcher(lists=[ListPage([], "10")], watches=[watch])
    reflector, _, clock = make(lw, stall_timeout=60)
    with Running(reflector):
        clock.block_until_timers(1)  # watching, the stall timer armed for +60 s
        clock.step(40)
        watch.gate.set()
        assert watch.spoke.wait(JOIN)  # a bookmark at +40 s
        clock.step(20)  # the timer fires at +60 s, finds the watch spoke 20 s ago: re-armed
        assert not watch.closed.is_set() and clock.timer_count() == 1
        assert clock.next_timer_deadline() == pytest.approx(clock.now() + 40)
        clock.step(39.9)
        assert not watch.closed.is_set()
        clock.step(0.1)  # 60 s after the bookmark
        assert watch.closed.is_set()


def test_step_after_stop_is_stopped_and_run_refuses_a_stopped_reflector():
    reflector, _, _ = make(ScriptedListerWatcher())
    reflector.stop()
    assert reflector.step() == Stopped()
    with pytest.raises(RuntimeError):
        reflector.run()


def test_bad_options_are_rejected():
    with pytest.raises(ValueError):
        Reflector(ScriptedListerWatcher(), RecordingStore(), name="")
    with pytest.raises(ValueError):
        make(ScriptedListerWatcher(), min_watch_timeout=10, max_watch_timeout=5)
    with pytest.raises(ValueError):
        make(ScriptedListerWatcher(), stall_timeout=0)


# --------------------------------------------------------------------------- gc pause


def test_gc_paused_nests_and_restores_the_collector_state():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


# --------------------------------------------------------------------------- transform


def test_the_list_transform_runs_on_each_page_as_it_arrives_and_keeps_an_object_it_fails_on():
    from pyinformers.cache._transforms import drop_managed_fields

    def heavy(name, rv):
        obj = pod(name, rv)
        obj["metadata"]["managedFields"] = [{"manager": "kubelet"}]
        return obj

    first = [heavy("a", "1"), heavy("b", "2")]
    seen: list[str] = []

    def transform(obj):
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise ValueError("cannot transform")
        return drop_managed_fields(obj)

    lw = ScriptedListerWatcher(
        lists=[
            ListPage(first, "9", "tok1"),
            ListPage([heavy("c", "3"), heavy("bad", "4")], "9", None),
        ]
    )
    reflector, store, _ = make(lw, page_size=2, list_transform=transform)
    assert reflector.step() == Listing(None, resource_version="0")
    assert reflector.step() == Listing("tok1", resource_version="0")
    # The first page is transformed before the second is fetched: its managedFields are gone already.
    assert seen == ["a", "b"] and all("managedFields" not in o["metadata"] for o in first)
    assert reflector.step() == Watching("9")
    assert seen == ["a", "b", "c", "bad"]
    assert store.ops == [("replace", ["a", "b", "c", "bad"], "9")]  # the failed one as decoded
