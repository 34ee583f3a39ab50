"""Helpers shared by the informer tests over HTTP (no tests here; named test_* to stay in the informer's files)."""

from __future__ import annotations

import threading
from typing import Any

from pyinformers.api._client import ResourceClient
from pyinformers.api._listwatch import ListWatch
from pyinformers.cache import DeletedFinalStateUnknown, SharedIndexInformer

#: Reflector settings that keep fault tests fast: short backoff, no long waits.
FAST_REFLECTOR = {"backoff_initial": 0.02, "backoff_max": 0.2}


def seed(server: Any, plural: str, objects: list[dict], group: str = "") -> None:
    """Create ``objects`` through the server's REST layer directly (fast; no HTTP, no faults)."""
    rt = server.registry.find(plural, group)
    for obj in objects:
        server.rest.create(rt, obj["metadata"].get("namespace"), obj)


def configmap(name: str, namespace: str = "default", **data: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": dict(data),
    }


def make_informer(
    api_client: Any,
    resource: Any,
    *,
    namespace: str | None = None,
    label_selector: Any = None,
    **kwargs: Any,
) -> SharedIndexInformer:
    lw = ListWatch(
        ResourceClient(api_client, resource), namespace=namespace, label_selector=label_selector
    )
    kwargs.setdefault("name", f"{resource}-test")
    kwargs.setdefault("metrics_registry", False)
    return SharedIndexInformer(lw, **kwargs)


def versions(objects: list[dict]) -> dict[str, str]:
    """``{namespace/name: resourceVersion}`` of ``objects``."""
    out = {}
    for obj in objects:
        md = obj["metadata"]
        key = f"{md['namespace']}/{md['name']}" if md.get("namespace") else md["name"]
        out[key] = md["resourceVersion"]
    return out


class EventLog:
    """A handler that records every call and checks it forms a consistent history.

    ``state()`` replays the calls into ``{key: resourceVersion}``: an add must
    be for an absent key, an update must start from the version last seen
    for that key and never go back in resourceVersion, and a delete (object
    or tombstone) must be for a present key: the informer only reports the
    deletion of an object it had cached.
    """

    def __init__(self, delay: threading.Event | None = None) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple] = []
        self.gate = delay

    @staticmethod
    def _key(obj: dict) -> str:
        md = obj["metadata"]
        return f"{md['namespace']}/{md['name']}" if md.get("namespace") else md["name"]

    def _wait(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(30), "test gate never opened"

    def on_add(self, obj: dict, is_in_initial_list: bool) -> None:
        self._wait()
        with self.lock:
            self.calls.append(
                ("add", self._key(obj), obj["metadata"]["resourceVersion"], is_in_initial_list)
            )

    def on_update(self, old: dict, new: dict) -> None:
        self._wait()
        with self.lock:
            self.calls.append(
                (
                    "update",
                    self._key(new),
                    old["metadata"]["resourceVersion"],
                    new["metadata"]["resourceVersion"],
                )
            )

    def on_delete(self, obj: Any) -> None:
        self._wait()
        with self.lock:
            if isinstance(obj, DeletedFinalStateUnknown):
                self.calls.append(("tombstone", obj.key))
            else:
                self.calls.append(("delete", self._key(obj), obj["metadata"]["resourceVersion"]))

    def snapshot(self) -> list[tuple]:
        with self.lock:
            return list(self.calls)

    def state(self) -> dict[str, str]:
        state: dict[str, str] = {}
        for call in self.snapshot():
            kind, key = call[0], call[1]
            if kind == "add":
                assert key not in state, f"add of {key} which is already present: {call}"
                state[key] = call[2]
            elif kind == "update":
                assert state.get(key) == call[2], (
                    f"update of {key} from {call[2]}, last seen {state.get(key)}"
                )
                assert int(call[3]) >= int(call[2]), f"update of {key} goes back in time: {call}"
                state[key] = call[3]
            else:
                assert key in state, f"{kind} of {key} which is absent: {call}"
                del state[key]
        return state

    def per_key(self, key: str) -> list[tuple]:
        return [c for c in self.snapshot() if c[1] == key]
