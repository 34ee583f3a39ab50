"""One bad object never stops an informer; a thread that dies makes it unhealthy (issue 12, items 1, 2, 7, 8).

Against the scripted list/watch source of test_informer (no HTTP): each test
feeds one object that a transform, the key function or an index function
fails on, or kills a thread, and checks what the others see.
"""

from __future__ import annotations

import logging
import threading

import pytest

from pyinformers.api._watch import WatchEvent
from pyinformers.cache import ResourceEventHandlerFuncs, SharedIndexInformer
from pyinformers.cache._store import NAMESPACE_INDEX, namespace_index
from pyinformers.testing import FakeListerWatcher, eventually
from tests.cache.test_informer import cache_state, make_informer, pod  # noqa: F401

pytestmark = pytest.mark.timeout(60)


def fussy_transform(obj):
    """A transform with a bug: it fails on objects labelled ``bad``."""
    if (obj["metadata"].get("labels") or {}).get("bad"):
        raise KeyError("spec")
    obj.setdefault("metadata", {})["annotations"] = {"transformed": "yes"}
    return obj


def started(make, lw, **kwargs):
    informer = make(lw, **kwargs)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    return informer


# -- transform, key and index failures -------------------------------------------------------------


def test_a_transform_failing_on_one_watched_object_does_not_stop_the_others(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = started(make_informer, lw, transform=fussy_transform)
    lw.add(pod("bad", metadata={"name": "bad", "namespace": "default", "labels": {"bad": "1"}}))
    lw.add(pod("b"))
    lw.modify(pod("a"))
    # Once, a raising transform killed the reflector thread: nothing after it reached the cache.
    eventually(
        lambda: cache_state(informer).keys() == {"a", "b"} and cache_state(informer)["a"] != "1",
        what="the changes after the bad object",
    )
    assert informer.indexer.get_by_key("default/b")["metadata"]["annotations"] == {
        "transformed": "yes"
    }
    assert informer.object_errors() == {"transform": 1}
    assert informer.healthy(), informer.health_problem()


def test_a_transform_failing_on_an_update_keeps_the_cached_version_and_a_relist_keeps_it_too(
    make_informer,
):
    lw = FakeListerWatcher([pod("a", 1), pod("b", 2)])
    informer = started(make_informer, lw, transform=fussy_transform)
    lw.modify(pod("a", metadata={"name": "a", "namespace": "default", "labels": {"bad": "1"}}))
    lw.modify(pod("b"))
    eventually(lambda: cache_state(informer)["b"] != "2")
    assert cache_state(informer)["a"] == "1"  # the last version that transformed cleanly
    # A relist that still has the untransformable version: no false deletion of "a".
    lw.expire_watches()
    eventually(lambda: lw.lists >= 2 and informer.object_errors().get("transform", 0) >= 2)
    lw.wait_for_watch(2)
    assert "a" in cache_state(informer)
    assert informer.healthy()


def test_a_transform_failing_on_a_deletion_still_deletes(make_informer):
    lw = FakeListerWatcher([pod("a", 1), pod("b", 2)])
    informer = started(make_informer, lw, transform=fussy_transform)
    lw.delete(pod("a", metadata={"name": "a", "namespace": "default", "labels": {"bad": "1"}}))
    eventually(lambda: "a" not in cache_state(informer), what="the deletion of a")
    assert informer.object_errors() == {"transform": 1}


def test_a_watch_event_without_metadata_is_a_broken_stream_not_a_crash(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = started(
        make_informer, lw, reflector_options={"backoff_initial": 0.01, "backoff_max": 0.05}
    )
    lw.streams[-1].push(WatchEvent("ADDED", {"apiVersion": "v1", "kind": "Pod"}))
    # Once, this killed the reflector thread. Now the watch is re-opened from the last good
    # resourceVersion, like after a broken connection, and changes flow again.
    lw.wait_for_watch(2)
    lw.add(pod("b"))
    eventually(lambda: "b" in cache_state(informer), what="the change after the malformed event")
    assert informer.reflector.stats.restarts >= 1 and informer.reflector.stats.relists == 0
    assert informer.healthy(), informer.health_problem()


def test_an_index_function_failing_on_one_object_keeps_it_in_the_cache(make_informer):
    def by_team(obj):
        return [obj["metadata"]["labels"]["team"]]  # KeyError for an object without the label

    lw = FakeListerWatcher(
        [
            pod(
                "a",
                1,
            ),
            pod("b", 2),
        ]
    )
    lw.objects["default/a"]["metadata"]["labels"] = {"team": "red"}
    informer = started(
        make_informer, lw, indexers={"team": by_team, NAMESPACE_INDEX: namespace_index}
    )
    # Once, an index function that raised dropped the object from the cache.
    assert set(cache_state(informer)) == {"a", "b"}
    assert [o["metadata"]["name"] for o in informer.indexer.by_index("team", "red")] == ["a"]
    assert len(informer.indexer.by_index(NAMESPACE_INDEX, "default")) == 2
    lw.modify(pod("b", metadata={"name": "b", "namespace": "default", "labels": {"team": "blue"}}))
    eventually(lambda: informer.indexer.by_index("team", "blue"), what="b indexed once it can be")
    lw.modify(pod("b"))  # loses its label again: out of the index, still cached
    eventually(lambda: not informer.indexer.by_index("team", "blue"))
    assert "b" in cache_state(informer)
    assert informer.object_errors() == {"index": 2}
    assert informer.healthy()


# -- threads that end -------------------------------------------------------------------------------


class Crash(BaseException):
    """Not an Exception: the kind of error nothing on the way catches (SystemExit is one)."""


def test_a_crashed_reflector_thread_makes_the_informer_unhealthy_with_the_reason(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = started(make_informer, lw)
    assert informer.healthy()
    original = lw.watch

    def crashing_watch(**kwargs):
        raise Crash("the reflector's watch blew up")

    lw.watch = crashing_watch
    lw.streams[-1].end()  # the watch closes; re-opening it crashes the reflector thread
    eventually(lambda: not informer.healthy(), what="the informer to report the dead reflector")
    assert "reflector" in informer.health_problem() and "Crash" in informer.health_problem()
    lw.watch = original


def test_a_crashed_handler_thread_makes_the_informer_unhealthy(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = make_informer(lw)

    def on_update(old, new):
        raise SystemExit("a handler called sys.exit()")

    registration = informer.add_event_handler(ResourceEventHandlerFuncs(on_update=on_update))
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    lw.modify(pod("a"))
    eventually(
        lambda: not informer.healthy(), what="the informer to report the dead handler thread"
    )
    assert f"handler {registration.name}" in informer.health_problem()


def test_an_ordinary_handler_error_is_counted_and_is_no_health_problem(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = make_informer(lw)

    def on_add(obj, initial):
        raise RuntimeError("handler bug")

    registration = informer.add_event_handler(ResourceEventHandlerFuncs(on_add=on_add))
    informer.start()
    assert informer.wait_for_cache_sync(10)
    assert registration.errors == 1 and informer.healthy()


# -- handler registrations ------------------------------------------------------------------------


def test_removing_a_registration_through_another_informer_raises_and_keeps_it(make_informer):
    lw_a, lw_b = FakeListerWatcher([pod("a", 1)]), FakeListerWatcher([])
    informer_a = started(make_informer, lw_a)
    informer_b = make_informer(lw_b)
    seen = []
    registration = informer_a.add_event_handler(
        ResourceEventHandlerFuncs(on_update=lambda old, new: seen.append(new))
    )
    with pytest.raises(ValueError, match="belongs to informer"):
        informer_b.remove_event_handler(registration)
    assert not registration.is_removed()
    lw_a.modify(pod("a"))
    eventually(lambda: seen, what="the registration to keep receiving")
    assert informer_a.remove_event_handler(registration)
    assert registration.is_removed()


def test_a_handler_falling_behind_is_warned_about_once_per_interval_and_removal_frees_its_buffer(
    make_informer, caplog
):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = make_informer(lw, handler_backlog_warning=5)
    gate = threading.Event()
    registration = informer.add_event_handler(
        ResourceEventHandlerFuncs(on_update=lambda old, new: gate.wait(30))
    )
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    caplog.set_level(logging.WARNING, logger="pyinformers.cache._processor")
    for _ in range(40):
        lw.modify(pod("a"))
    eventually(lambda: registration.backlog() >= 30, what="the backlog to build up")
    warnings = [r for r in caplog.records if "notifications behind" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # rate-limited: not one per event
    assert registration.name in warnings[0].getMessage()
    # Removing the handler frees what it had buffered at once (it once kept it).
    registration.remove(timeout=0)
    assert registration.backlog() == 0
    gate.set()
    assert registration.remove(timeout=5)


def test_a_negative_backlog_threshold_is_refused():
    with pytest.raises(ValueError, match="handler_backlog_warning"):
        SharedIndexInformer(
            FakeListerWatcher([]), name="x", handler_backlog_warning=-1, metrics_registry=False
        )
