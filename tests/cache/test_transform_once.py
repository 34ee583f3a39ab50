"""An informer transforms each object it receives exactly once, whichever way the object came.

Listed objects are transformed by the reflector as they are decoded (a list
page, a streaming list's event) and must not be transformed again when the
list reaches the DeltaFIFO's ``replace``; watched objects are transformed by
the FIFO. The transform below counts its calls *on the object itself* (a
top-level field of the decoded dict, which the fakes copy for every answer),
so an object transformed twice reaches the cache and the handlers with a
count of 2, whatever path it took.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyinformers.api._client import ListPage
from pyinformers.api._errors import BadRequest
from pyinformers.api._watch import WatchEvent
from pyinformers.cache import DeltaFIFO, ResourceEventHandlerFuncs, SharedIndexInformer
from pyinformers.testing import FakeListerWatcher, ScriptedListerWatcher, ScriptedWatch, eventually
from tests.cache.test_informer import pod

pytestmark = pytest.mark.timeout(120)

COUNT = "transformCalls"  # top-level: shallow copies of a decoded object do not share it


class CountingTransform:
    """Counts calls per object (on the object) and in all; fails on objects labelled ``bad``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()

    def __call__(self, obj):
        obj[COUNT] = obj.get(COUNT, 0) + 1
        with self.lock:
            self.calls[obj["metadata"]["name"]] += 1
        if (obj["metadata"].get("labels") or {}).get("bad"):
            raise ValueError("cannot transform this one")
        obj["metadata"].pop("managedFields", None)
        return obj


class Seen:
    """Every object the handlers received."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: list[dict] = []

    def note(self, obj) -> None:
        with self.lock:
            self.objects.append(obj)

    def handler(self) -> ResourceEventHandlerFuncs:
        return ResourceEventHandlerFuncs(
            on_add=lambda obj, initial: self.note(obj),
            on_update=lambda old, new: self.note(new),
            on_delete=lambda obj: self.note(getattr(obj, "obj", obj)),
        )

    def names(self) -> set[str]:
        with self.lock:
            return {o["metadata"]["name"] for o in self.objects}


def heavy(name: str, rv: int) -> dict:
    obj = pod(name, rv)
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    return obj


def scripted_pages(objects: list[dict], page_size: int, rv: str) -> list[ListPage]:
    chunks = [objects[i : i + page_size] for i in range(0, len(objects), page_size)] or [[]]
    return [
        ListPage([dict(o) for o in chunk], rv, f"tok{i + 1}" if i + 1 < len(chunks) else None)
        for i, chunk in enumerate(chunks)
    ]


def source(path: str, objects: list[dict], page_size: int):
    """(lister-watcher, the live watch stream to push events on, or None for a FakeListerWatcher)."""
    rv = str(len(objects) + 1)
    if path == "streaming list":
        return FakeListerWatcher(objects, watch_list=True), None
    if path == "list (resourceVersion=0)":
        return FakeListerWatcher(objects), None
    live = ScriptedWatch(block=True)
    if path == "paged list":
        return ScriptedListerWatcher(
            lists=scripted_pages(objects, page_size, rv), watches=[live]
        ), live
    assert path == "list after a refused streaming list"
    refused = BadRequest("sendInitialEvents is not supported")
    lw = ScriptedListerWatcher(
        lists=scripted_pages(objects, len(objects) or 1, rv),
        watches=[refused, live],
        watch_list=True,
    )
    return lw, live


PATHS = [
    "streaming list",
    "list (resourceVersion=0)",
    "paged list",
    "list after a refused streaming list",
]


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(PATHS),
    count=st.integers(min_value=0, max_value=7),
    page_size=st.integers(min_value=1, max_value=3),
)
def test_every_object_is_transformed_exactly_once_whichever_path_it_takes(path, count, page_size):
    objects = [heavy(f"p{i}", i + 1) for i in range(count)]
    transform = CountingTransform()
    lw, live = source(path, objects, page_size)
    informer = SharedIndexInformer(
        lw,
        name="transform-once",
        transform=transform,
        metrics_registry=False,
        reflector_options={"page_size": page_size},
    )
    seen = Seen()
    informer.add_event_handler(seen.handler())
    informer.start()
    try:
        assert informer.wait_for_cache_sync(10)
        # Then watch events: an add, an update, a delete.
        if live is None:
            lw.wait_for_watch()
            lw.add(heavy("new", 100))
            lw.modify(heavy("new", 101))
            lw.delete(heavy("new", 102))
        else:
            live.push(WatchEvent("ADDED", heavy("new", 100)))
            live.push(WatchEvent("MODIFIED", heavy("new", 101)))
            live.push(WatchEvent("DELETED", heavy("new", 102)))
        eventually(
            lambda: "new" in seen.names() and informer.indexer.get_by_key("default/new") is None,
            what="the watch events to reach the handler",
        )
        eventually(lambda: len(seen.objects) == count + 3, what="every object at the handler")
    finally:
        assert informer.stop(timeout=5.0)
    twice = [
        (o["metadata"]["name"], o[COUNT])
        for o in seen.objects + informer.indexer.list()
        if o[COUNT] != 1
    ]
    assert not twice, f"{path}: transformed more than once: {twice}"
    # One call per decoded object: each listed object once, the watched one once per event.
    assert transform.calls == Counter({**{o["metadata"]["name"]: 1 for o in objects}, "new": 3}), (
        path
    )
    assert all("managedFields" not in o["metadata"] for o in informer.indexer.list())


@pytest.mark.parametrize("watch_list", [True, False], ids=["streaming list", "list"])
def test_a_listed_object_the_transform_fails_on_is_reported_once_and_keeps_its_cached_version(
    watch_list,
):
    lw = FakeListerWatcher([heavy("a", 1), heavy("b", 2)], watch_list=watch_list)
    transform = CountingTransform()
    informer = SharedIndexInformer(
        lw, name="transform-fails", transform=transform, metrics_registry=False
    )
    deleted: list[str] = []
    informer.add_event_handler(
        ResourceEventHandlerFuncs(on_delete=lambda obj: deleted.append(informer_key(obj)))
    )
    informer.start()
    try:
        assert informer.wait_for_cache_sync(10)
        lw.wait_for_watch()
        # "a" turns untransformable while nobody watches; the relist that follows still has it.
        bad = heavy("a", 1)
        bad["metadata"]["labels"] = {"bad": "1"}
        lw.objects["default/a"] = bad
        lw.expire_watches()
        lw.wait_for_watch(2)
        # A change after the relist reaches the cache only after everything the relist queued.
        lw.add(heavy("z", 10))
        eventually(
            lambda: informer.indexer.get_by_key("default/z") is not None,
            what="the change after the relist",
        )
    finally:
        assert informer.stop(timeout=5.0)
    # No false deletion: the cache keeps the last version that transformed cleanly.
    assert deleted == []
    cached = informer.indexer.get_by_key("default/a")
    assert cached is not None and "labels" not in cached["metadata"]
    assert informer.object_errors() == {"transform": 1}  # reported once, not once per pass
    assert transform.calls == Counter({"a": 2, "b": 2, "z": 1})  # one call per decoded object


def informer_key(obj) -> str:
    return getattr(obj, "key", None) or f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def test_a_fifo_that_transforms_in_replace_transforms_each_object_once_even_when_one_fails():
    transform = CountingTransform()
    errors: list[tuple[str, str]] = []
    fifo = DeltaFIFO(
        transform=transform,
        on_error=lambda stage, obj, error, why: errors.append((stage, obj["metadata"]["name"])),
    )
    listed = [heavy("a", 1), heavy("bad", 2), heavy("c", 3)]
    listed[1]["metadata"]["labels"] = {"bad": "1"}
    fifo.replace(listed, "3")
    assert transform.calls == Counter({"a": 1, "bad": 1, "c": 1})
    assert errors == [("transform", "bad")]
    assert fifo.list_keys() == ["default/a", "default/c"]
    assert [o[COUNT] for o in listed] == [1, 1, 1]
