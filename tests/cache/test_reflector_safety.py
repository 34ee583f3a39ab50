"""Reflector defaults that keep a cache honest without tuning (issue 12, items 1, 4, 5, 8).

A stalled watch is caught with default settings; every watch asks for
bookmarks; a malformed event is a broken stream, not a crash; a 404 for a
custom resource says what to check; the first list reads the watch cache and
a relist after 410 reads consistently (see also test_reflector.py).
"""

from __future__ import annotations

from pyinformers.api import BadRequest, NotFound, WatchEvent
from pyinformers.api._client import ListPage
from pyinformers.api._resource import Resource
from pyinformers.cache.reflector._reflector import DEFAULT_STALL_TIMEOUT
from pyinformers.cache.reflector._states import BackingOff, Listing, NeedList, Watching
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS
from pyinformers.testing import ScriptedListerWatcher, ScriptedWatch, eventually
from tests.cache.test_reflector import RecordingStore, Running, bookmark, make, pod

THINGS = Resource("example.com", "v1", "things", "Thing")


def test_a_stalled_watch_is_caught_with_the_default_settings():
    assert (
        120 < DEFAULT_STALL_TIMEOUT <= 180
    )  # above real bookmark gaps, recovers within about 3 minutes
    first = ScriptedWatch([bookmark("11")], block=True)
    second = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([], "10")], watches=[first, second])
    reflector, _, clock = make(lw)  # no stall_timeout given
    with Running(reflector):
        assert first.blocking.wait(5)
        clock.step(
            DEFAULT_STALL_TIMEOUT - 30
        )  # a quiet but healthy watch (a bookmark may be 2 minutes away)
        assert not first.closed.is_set()
        clock.step(30)  # the stall timer runs inside step()
        assert first.closed.is_set(), "the default settings never noticed the stall"
        clock.block_until_waiters(1)  # backing off before the re-watch
        assert isinstance(reflector.state, BackingOff)
        clock.step(reflector.state.delay)
        assert second.blocking.wait(5)
        assert (
            lw.watch_calls()[1]["resource_version"] == "11"
        )  # restarted from the last resourceVersion
        assert reflector.stats.stalls == 1 and reflector.stats.relists == 0


def test_every_watch_asks_for_bookmarks():
    lw = ScriptedListerWatcher(
        lists=[ListPage([], "10")], watches=[ScriptedWatch([bookmark("12")]), ScriptedWatch([])]
    )
    reflector, _, _ = make(lw)
    for _ in range(4):
        reflector.step()
    assert len(lw.watch_calls()) == 2
    assert all(call["allow_bookmarks"] is True for call in lw.watch_calls())


def test_a_malformed_event_rewatches_from_the_last_good_version_and_twice_relists():
    malformed = WatchEvent("ADDED", {"apiVersion": "v1", "kind": "Pod"})  # no metadata
    lw = ScriptedListerWatcher(
        lists=[ListPage([pod("a", "10")], "10"), ListPage([pod("a", "10"), pod("b", "13")], "13")],
        watches=[
            ScriptedWatch([WatchEvent("ADDED", pod("b", "11")), malformed]),
            ScriptedWatch(
                [WatchEvent("MODIFIED", {"metadata": {"namespace": "default"}})]
            ),  # no name
            ScriptedWatch(block=False),
        ],
    )
    reflector, store, clock = make(lw)
    reflector.step()
    assert reflector.step() == Watching("10")
    state = reflector.step()
    # Once, a watch object without metadata crashed the reflector thread.
    assert isinstance(state, BackingOff) and state.then == Watching("11"), state
    assert (
        "MalformedEvent" in reflector.last_error and "Pod without metadata" in reflector.last_error
    )
    clock.step(state.delay)
    reflector.step()
    state = reflector.step()  # the re-opened watch starts with a malformed event again: relist
    assert isinstance(state, BackingOff) and state.then == NeedList(consistent=True), state
    clock.step(state.delay)
    reflector.step()
    assert reflector.step() == Listing(None)
    assert reflector.step() == Watching("13")
    assert [op[0] for op in store.ops] == ["replace", "add", "replace"]
    assert reflector.stats.relists == 1 and reflector.stats.restarts == 2


def _list_fails_with_404(resource):
    lw = ScriptedListerWatcher(
        lists=[NotFound("the server could not find the requested resource"), ListPage([], "5")]
    )
    lw.resource = resource
    reflector, _, clock = make(lw)
    reflector.step()
    state = reflector.step()
    assert isinstance(state, BackingOff)
    return reflector, state, clock


def test_a_404_for_a_custom_resource_asks_whether_its_crd_is_installed_and_keeps_retrying():
    reflector, state, clock = _list_fails_with_404(THINGS)
    assert "is the CRD installed?" in reflector.last_error
    assert "things.example.com" in reflector.last_error
    assert state.then == Listing(None, resource_version="0")  # it retries
    clock.step(state.delay)
    reflector.step()
    assert reflector.step() == Watching("5")
    assert reflector.last_error == ""  # a success clears it


def test_a_404_for_a_built_in_resource_names_the_api_version():
    reflector, _, _ = _list_fails_with_404(DEPLOYMENTS)
    assert "apps/v1" in reflector.last_error and "CRD" not in reflector.last_error
    reflector, _, _ = _list_fails_with_404(CONFIGMAPS)
    assert "configmaps in v1" in reflector.last_error


def test_a_failing_timer_does_not_end_stall_detection():
    class BrokenResync:
        def __init__(self, store):
            self.store = store
            self.calls = 0

        def __getattr__(self, name):
            return getattr(self.store, name)

        def resync(self):
            self.calls += 1
            raise RuntimeError("resync broke")

    first = ScriptedWatch([bookmark("11")], block=True)
    second = ScriptedWatch(block=True)
    lw = ScriptedListerWatcher(lists=[ListPage([], "10")], watches=[first, second])
    store = BrokenResync(RecordingStore())
    reflector, _, clock = make(lw, store=store, resync_period=10)
    with Running(reflector):
        assert first.blocking.wait(5)
        clock.step(10)
        eventually(lambda: store.calls == 1, what="the resync")  # the resync raised ...
        clock.step(DEFAULT_STALL_TIMEOUT - 10)  # the stall timer runs inside step()
        assert first.closed.is_set(), "... and stall detection died with it"
        calls = store.calls
        clock.step(10)
        eventually(
            lambda: store.calls > calls, what="the next resync"
        )  # ... nor did the resync timer


def test_a_400_says_retrying_cannot_fix_it():
    lw = ScriptedListerWatcher(lists=[BadRequest('unable to parse requirement: "app in (web"')])
    reflector, _, _ = make(lw)
    reflector.step()
    assert isinstance(reflector.step(), BackingOff)
    assert "retrying cannot fix" in reflector.last_error and "selector" in reflector.last_error
