"""SharedIndexInformer against a scripted list/watch source (no HTTP): cache, handlers, resync, GC."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from pyinformers.cache import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    drop_managed_fields,
)
from pyinformers.clock import FakeClock
from pyinformers.testing import FakeListerWatcher, eventually

pytestmark = pytest.mark.timeout(60)


def pod(name, rv=None, namespace="default", **extra):
    """A Pod; without ``rv``, the FakeListerWatcher that stores it gives it the next resourceVersion."""
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}}
    if rv is not None:
        obj["metadata"]["resourceVersion"] = str(rv)
    obj.update(extra)
    return obj


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple] = []

    def on_add(self, obj, is_in_initial_list):
        with self.lock:
            self.calls.append(
                (
                    "add",
                    obj["metadata"]["name"],
                    obj["metadata"]["resourceVersion"],
                    is_in_initial_list,
                )
            )

    def on_update(self, old, new):
        with self.lock:
            self.calls.append(
                (
                    "update",
                    new["metadata"]["name"],
                    old["metadata"]["resourceVersion"],
                    new["metadata"]["resourceVersion"],
                )
            )

    def on_delete(self, obj):
        with self.lock:
            if isinstance(obj, DeletedFinalStateUnknown):
                self.calls.append(("tombstone", obj.key))
            else:
                self.calls.append(
                    ("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
                )

    def state(self) -> dict:
        """The name -> resourceVersion map these calls add up to."""
        state: dict[str, str] = {}
        for call in list(self.calls):
            if call[0] == "add":
                assert call[1] not in state, f"add for {call[1]} already present"
                state[call[1]] = call[2]
            elif call[0] == "update":
                assert state.get(call[1]) == call[2], f"update {call} from a stale version"
                state[call[1]] = call[3]
            elif call[0] == "delete":
                assert call[1] in state
                del state[call[1]]
            else:
                state.pop(call[1].split("/")[-1], None)
        return state


def cache_state(informer) -> dict:
    return {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.indexer.list()
    }


@pytest.fixture
def make_informer():
    made = []

    def make(lw, **kwargs):
        kwargs.setdefault("name", f"test-{len(made)}")
        kwargs.setdefault("metrics_registry", False)
        informer = SharedIndexInformer(lw, **kwargs)
        made.append(informer)
        return informer

    yield make
    for informer in made:
        assert informer.stop(timeout=5.0), f"{informer!r} did not stop"


@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "streaming-list"])
def test_initial_list_fills_the_cache_and_reaches_handlers_as_initial_adds(
    make_informer, watch_list
):
    lw = FakeListerWatcher([pod(f"p{i}", i + 1) for i in range(50)], watch_list=watch_list)
    informer = make_informer(lw)
    rec = Recorder()
    registration = informer.add_event_handler(rec)
    assert not informer.has_synced() and not registration.has_synced()
    informer.start()
    assert informer.wait_for_cache_sync(10)
    assert registration.has_synced()
    assert len(informer.indexer) == 50
    assert sorted(c[1] for c in rec.calls) == sorted(f"p{i}" for i in range(50))
    assert all(c[0] == "add" and c[3] is True for c in rec.calls)
    assert informer.last_sync_resource_version() == "51"
    assert informer.lister is not None and informer.is_running()
    assert lw.lists == (0 if watch_list else 1)


@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "streaming-list"])
def test_changes_after_sync_reach_every_handler_in_order(make_informer, watch_list):
    lw = FakeListerWatcher([pod("a", 1)], watch_list=watch_list)
    informer = make_informer(lw)
    recorders = [Recorder(), Recorder()]
    for rec in recorders:
        informer.add_event_handler(rec)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    lw.modify(pod("a"))
    lw.add(pod("b"))
    lw.modify(pod("b"))
    lw.delete(pod("a"))
    expected = [
        ("add", "a", "1", True),
        ("update", "a", "1", "3"),
        ("add", "b", "4", False),
        ("update", "b", "4", "5"),
        ("delete", "a", "6"),
    ]
    for rec in recorders:
        eventually(lambda: len(rec.calls) == len(expected))
        # Order holds per key (the FIFO batches a key's deltas), not across keys.
        for key in ("a", "b"):
            assert [c for c in rec.calls if c[1] == key] == [c for c in expected if c[1] == key]
    assert cache_state(informer) == {"b": "5"}


def test_a_handler_added_late_gets_the_cache_as_adds_then_later_changes_exactly_once(make_informer):
    lw = FakeListerWatcher([pod(f"p{i}", i + 1) for i in range(20)])
    informer = make_informer(lw)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set() and n < 2000:
            lw.modify(pod(f"p{n % 20}"))
            n += 1

    thread = threading.Thread(target=writer, name="test-writer")
    thread.start()
    late = Recorder()
    registration = informer.add_event_handler(late)
    thread.join(30)
    stop.set()
    eventually(
        lambda: (
            cache_state(informer)
            == {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in lw.objects.values()
            }
        )
    )
    eventually(lambda: registration.backlog() == 0 and late.state() == cache_state(informer))
    assert registration.has_synced()
    initial = [c for c in late.calls if c[0] == "add"]
    assert len(initial) == 20 and all(c[3] is True for c in initial)


def test_deletes_deliver_the_last_object_and_relists_deliver_tombstones(make_informer):
    lw = FakeListerWatcher([pod("a", 1), pod("b", 2), pod("c", 3)])
    informer = make_informer(lw)
    rec = Recorder()
    informer.add_event_handler(rec)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    lw.delete(pod("a"))
    eventually(lambda: ("delete", "a", "5") in rec.calls)
    # "b" vanishes while the watch is down; the next list no longer has it.
    lw.delete_unseen(pod("b"))
    lw.expire_watches()  # the watch fails with 410: the reflector must relist
    eventually(lambda: ("tombstone", "default/b") in rec.calls, what="tombstone for b")
    assert cache_state(informer) == {"c": "3"}


def test_transform_is_applied_before_the_object_is_stored(make_informer):
    lw = FakeListerWatcher(
        [
            pod("a", 1, extra_field=1)
            | {
                "metadata": {
                    "name": "a",
                    "namespace": "default",
                    "resourceVersion": "1",
                    "managedFields": [{"m": 1}],
                }
            }
        ]
    )
    informer = make_informer(lw, transform=drop_managed_fields)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    assert "managedFields" not in informer.indexer.list()[0]["metadata"]


def test_resync_replays_the_cache_as_updates_to_handlers_whose_period_is_due(make_informer):
    clock = FakeClock()
    lw = FakeListerWatcher([pod("a", 1), pod("b", 2)])
    informer = make_informer(lw, clock=clock)
    often, rarely, never = Recorder(), Recorder(), Recorder()
    informer.add_event_handler(often, resync_period=10)
    informer.add_event_handler(rarely, resync_period=30)
    informer.add_event_handler(never)
    informer.start()
    assert informer.wait_for_cache_sync(10)

    def updates(rec):
        return sum(c[0] == "update" for c in list(rec.calls))

    # The reflector's resync timer runs inside step(): one resync per 10 s step. The
    # handlers receive it on their own threads, which the test waits for.
    for n in (1, 2, 3):
        clock.step(10)
        eventually(lambda: updates(often) == 2 * n, what=f"resync {n} of 2 objects")
    eventually(lambda: informer.registrations()[1].backlog() == 0)
    assert updates(often) == 6
    assert updates(rarely) == 2, (
        often.calls,
        rarely.calls,
    )  # due once, at 30 s: every object replayed
    assert all(c[2] == c[3] for rec in (often, rarely) for c in rec.calls if c[0] == "update")
    assert [c[0] for c in never.calls] == ["add", "add"]
    assert lw.lists == 1, "a resync is not a relist"


@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "streaming-list"])
def test_the_cyclic_gc_is_paused_until_the_initial_list_is_in_and_then_restored(
    make_informer, watch_list
):
    assert gc.isenabled()
    lw = FakeListerWatcher([pod("a", 1)], watch_list=watch_list)
    listing = threading.Event()
    gate = threading.Event()
    original = lw.watch if watch_list else lw.list

    def slow_list(**kwargs):
        listing.set()
        assert gate.wait(10)
        return original(**kwargs)

    setattr(lw, "watch" if watch_list else "list", slow_list)
    informer = make_informer(lw)
    informer.start()
    assert listing.wait(10)
    assert not gc.isenabled(), "the collector runs while the initial list is being fetched"
    gate.set()
    assert informer.wait_for_cache_sync(10)
    eventually(gc.isenabled, what="gc restored")


def test_stop_ends_every_thread_and_an_informer_does_not_restart(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = make_informer(lw)
    informer.add_event_handler(Recorder())
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    began = time.monotonic()
    assert informer.stop(timeout=5.0)
    assert time.monotonic() - began < 1.0
    names = {t.name for t in threading.enumerate()}
    assert not any(
        n.startswith(
            ("pyinformers-informer-test", "pyinformers-reflector-test", "pyinformers-handler-test")
        )
        for n in names
    ), names
    assert not informer.is_running()
    with pytest.raises(RuntimeError):
        informer.start()
    with pytest.raises(RuntimeError):
        informer.add_event_handler(Recorder())


def test_stop_right_after_start_ends_every_thread(make_informer):
    # Threads are started under the state lock, so stop() never meets a created, unstarted one.
    for _ in range(30):
        informer = make_informer(FakeListerWatcher([pod("a", 1)]))
        informer.add_event_handler(Recorder())
        informer.start()
        assert informer.stop(timeout=5.0)
        assert not informer.is_running()


def test_run_blocks_the_calling_thread_until_stop_is_set(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = make_informer(lw)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="pyinformers-test-run")
    thread.start()
    assert informer.wait_for_cache_sync(10)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_add_indexers_only_before_start(make_informer):
    lw = FakeListerWatcher([pod("a", 1, spec={"nodeName": "n1"})])
    informer = make_informer(lw)
    informer.add_indexers({"node": lambda o: [o.get("spec", {}).get("nodeName", "")]})
    informer.start()
    assert informer.wait_for_cache_sync(10)
    assert [o["metadata"]["name"] for o in informer.indexer.by_index("node", "n1")] == ["a"]
    with pytest.raises(RuntimeError):
        informer.add_indexers({"other": lambda o: []})


def test_event_handler_funcs_and_bad_arguments(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    with pytest.raises(ValueError):
        SharedIndexInformer(lw, name="")
    with pytest.raises(ValueError):
        SharedIndexInformer(lw, name="x", resync_period=-1)
    with pytest.raises(TypeError):
        SharedIndexInformer(lw, name="x", transform=42)
    informer = make_informer(lw)
    added = []
    registration = informer.add_event_handler(
        ResourceEventHandlerFuncs(on_add=lambda o, i: added.append(o))
    )
    informer.start()
    assert informer.wait_for_cache_sync(10)
    assert [o["metadata"]["name"] for o in added] == ["a"]
    assert "synced=True" in repr(informer) and "objects=1" in repr(informer)
    assert registration.remove(timeout=5)
    assert informer.registrations() == []


def test_a_failing_handler_does_not_break_the_informer(make_informer):
    lw = FakeListerWatcher([pod("a", 1)])
    informer = make_informer(lw)

    def explode(obj, initial):
        raise ValueError("handler bug")

    bad = informer.add_event_handler(ResourceEventHandlerFuncs(on_add=explode))
    good = Recorder()
    informer.add_event_handler(good)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    lw.add(pod("b"))
    eventually(lambda: len(good.calls) == 2)
    eventually(lambda: bad.errors == 2)


class _InlineThreads:
    """An inline handler (like the built-in enqueue handlers) recording which thread applied each change."""

    runs_inline = True

    def __init__(self) -> None:
        self.threads: list[str] = []

    def on_update(self, old, new):
        self.threads.append(threading.current_thread().name)


def test_in_steady_state_the_reflector_thread_applies_watch_events_and_a_relist_backlog_is_popped(
    make_informer,
):
    lw = FakeListerWatcher([pod(f"p{i}", i + 1) for i in range(5)])
    informer = make_informer(lw)
    handler = _InlineThreads()
    informer.add_event_handler(handler)
    informer.start()
    assert informer.wait_for_cache_sync(10)
    lw.wait_for_watch()
    for i in range(50):
        lw.modify(pod(f"p{i % 5}"))
    eventually(lambda: len(handler.threads) == 50, what="50 updates delivered")
    assert {name.split("-")[1] for name in handler.threads} == {"reflector"}, (
        "one hand-off: no informer thread"
    )
    lw.expire_watches()  # 410: a relist, whose objects the informer thread pops; events queue behind it
    for i in range(10):
        lw.modify(pod(f"p{i % 5}"))
    eventually(
        lambda: (
            cache_state(informer)
            == {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in lw.objects.values()
            }
        ),
        what="cache equals the server",
    )
