"""A stateful property test: whatever the writes and faults, a settled reflector's store equals the server.

A tiny model server (objects, a global resourceVersion, an event history that
can be compacted, list snapshots behind continue tokens) answers the
reflector's list and watch calls. Hypothesis interleaves writes, compactions
and faults (a watch cut mid-stream, a 500, a throttle, an ERROR 410 inside the
stream, an expired continue token) with reflector steps. After every rule the
reflector is allowed to settle (with the fake clock stepped over its
backoffs); then its store must hold exactly the server's objects at their
resourceVersions, relists must be explained by compactions or 410s, and the
last resourceVersion must never go backwards.
"""

from __future__ import annotations

import random

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from prometheus_client import CollectorRegistry

from pyinformers.api import Gone, ServerError, TooManyRequests, WatchEvent
from pyinformers.api._client import ListPage
from pyinformers.cache.reflector._reflector import INITIAL_EVENTS_END_ANNOTATION, Reflector
from pyinformers.cache.reflector._states import BackingOff, Watching
from pyinformers.clock import FakeClock
from pyinformers.testing import ScriptedWatch

NAMES = st.sampled_from([f"o{i}" for i in range(6)])


class ModelServer:
    """``streams``: it serves streaming lists; otherwise it ignores ``send_initial_events``
    (a watch with no resourceVersion replays its history, then a plain bookmark), which the
    reflector must detect and list instead."""

    def __init__(self, *, streams: bool = False) -> None:
        self.streams = streams
        self.rv = 1
        self.objects: dict[str, dict] = {}
        self.history: list[tuple[int, str, dict]] = []
        self.compacted = 0  # events with rv <= compacted are forgotten
        self.snapshots: dict[int, list[dict]] = {}
        self.faults: list[str] = []  # consumed by the next list/watch call
        self.gone_answers = 0  # 410s handed out
        self.list_calls = 0

    def _write(self, etype: str, name: str, obj: dict) -> None:
        self.rv += 1
        obj = {
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(self.rv)},
            "v": self.rv,
        }
        if etype == "DELETED":
            self.objects.pop(name)
        else:
            self.objects[name] = obj
        self.history.append((self.rv, etype, obj))

    def upsert(self, name: str) -> None:
        self._write("MODIFIED" if name in self.objects else "ADDED", name, {})

    def delete(self, name: str) -> None:
        if name in self.objects:
            self._write("DELETED", name, {})

    def compact(self) -> None:
        self.compacted = self.rv
        self.snapshots.clear()

    # -- the ListerWatcher protocol ----------------------------------------------------
    def list(
        self, *, limit=None, continue_=None, resource_version=None, resource_version_match=None
    ):
        self.list_calls += 1
        fault = self.faults.pop(0) if self.faults and self.faults[0] in ("500", "429") else None
        if fault == "500":
            raise ServerError("injected")
        if fault == "429":
            raise TooManyRequests("injected", retry_after=2.0)
        if continue_:
            snap_rv, start = (int(x) for x in continue_.split(":"))
            if snap_rv not in self.snapshots:
                self.gone_answers += 1
                raise Gone("continue token expired", reason="Expired")
            items = self.snapshots[snap_rv]
        else:
            snap_rv, start = self.rv, 0
            items = [self.objects[k] for k in sorted(self.objects)]
            self.snapshots[snap_rv] = items
        end = len(items) if limit is None else start + limit
        token = f"{snap_rv}:{end}" if end < len(items) else None
        return ListPage(list(items[start:end]), str(snap_rv), token)

    def watch(
        self,
        *,
        resource_version=None,
        allow_bookmarks=True,
        timeout_seconds=None,
        send_initial_events=False,
    ):
        fault = self.faults.pop(0) if self.faults else None
        if fault == "500":
            raise ServerError("injected")
        if fault == "429":
            raise TooManyRequests("injected", retry_after=3.0)
        since = int(resource_version or 0)
        if send_initial_events and self.streams:
            # The current objects, then the bookmark that ends them (no resourceVersion: no 410).
            events = [WatchEvent("ADDED", self.objects[k]) for k in sorted(self.objects)]
            end = {
                "resourceVersion": str(self.rv),
                "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"},
            }
            events.append(WatchEvent("BOOKMARK", {"metadata": end}))
        else:
            if since < self.compacted:
                self.gone_answers += 1
                raise Gone("too old", reason="Expired")
            events = [WatchEvent(t, o) for rv, t, o in self.history if rv > since]
            if allow_bookmarks:
                events.append(
                    WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": str(self.rv)}})
                )
        if fault == "cut":
            return ScriptedWatch(events[: len(events) // 2], error=ConnectionResetError("cut"))
        if fault == "gone-event":
            self.gone_answers += 1
            return ScriptedWatch(
                events[: len(events) // 2], error=Gone("too old", reason="Expired")
            )
        return ScriptedWatch(events)


class DictStore:
    def __init__(self) -> None:
        self.objects: dict[str, dict] = {}

    def replace(self, objects, resource_version):
        self.objects = {o["metadata"]["name"]: o for o in objects}

    def add(self, obj):
        self.objects[obj["metadata"]["name"]] = obj

    update = add

    def delete(self, obj):
        self.objects.pop(obj["metadata"]["name"], None)

    def resync(self):
        pass


class ReflectorAgainstModel(RuleBasedStateMachine):
    streams = False  # the server ignores streaming lists: the reflector detects it and lists

    def __init__(self) -> None:
        super().__init__()
        self.server = ModelServer(streams=self.streams)
        self.store = DictStore()
        self.clock = FakeClock()
        self.reflector = Reflector(
            self.server,
            self.store,
            name="model",
            clock=self.clock,
            options={"page_size": 2},
            metrics_registry=CollectorRegistry(),
            rng=random.Random(0),
        )
        self.last_rv = 0

    @rule(name=NAMES)
    def upsert(self, name):
        self.server.upsert(name)

    @rule(name=NAMES)
    def delete(self, name):
        self.server.delete(name)

    @rule()
    def compact(self):
        self.server.compact()

    @rule(fault=st.sampled_from(["cut", "500", "429", "gone-event"]))
    def fault(self, fault):
        self.server.faults.append(fault)

    @rule(steps=st.integers(1, 4))
    def step(self, steps):
        for _ in range(steps):
            state = self.reflector.step()
            if isinstance(state, BackingOff):
                self.clock.step(state.delay)

    def settle(self) -> None:
        for _ in range(200):
            state = self.reflector.state
            if (
                isinstance(state, Watching)
                and not self.server.faults
                and state.resource_version == str(self.server.rv)
                and self.reflector.has_synced_once()
            ):
                return
            state = self.reflector.step()
            if isinstance(state, BackingOff):
                self.clock.step(state.delay)
        raise AssertionError(f"reflector did not settle: {self.reflector!r}")

    @invariant()
    def settled_store_equals_the_server(self):
        self.settle()
        have = {k: o["metadata"]["resourceVersion"] for k, o in self.store.objects.items()}
        want = {k: o["metadata"]["resourceVersion"] for k, o in self.server.objects.items()}
        assert have == want
        stats = self.reflector.stats
        assert stats.relists <= self.server.gone_answers
        if self.streams:  # a server that streams is never listed, whatever the faults
            assert self.server.list_calls == 0
        rv = int(self.reflector.last_sync_resource_version() or 0)
        assert rv >= self.last_rv
        self.last_rv = rv


class ReflectorAgainstAStreamingModel(ReflectorAgainstModel):
    streams = True  # the default path: streaming lists, relists included


ReflectorAgainstModel.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None
)
ReflectorAgainstAStreamingModel.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None
)
test_reflector_against_a_model_server = ReflectorAgainstModel.TestCase
test_reflector_against_a_streaming_model_server = ReflectorAgainstAStreamingModel.TestCase
