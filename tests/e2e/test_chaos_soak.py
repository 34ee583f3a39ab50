"""Chaos soak: random writes while faults fire at random; afterwards every cache equals the server.

Three informers over HTTP (all namespaces with two handlers, one namespace, a
label selector) run while two writers create, patch (relabelling objects in
and out of the selector) and delete ConfigMaps, and a fault thread drops,
stalls and compacts watches and makes requests fail with 500 or 429. When the
faults stop, every informer's cache must equal the server's objects exactly
(nothing lost, no ghosts), and every handler's calls must replay to that same
state with each key's history moving forward only.

Bounded: ``PYINFORMERS_SOAK_SECONDS`` (default 30) of chaos, then up to 60 s
to converge. The random seed is printed on failure (``PYINFORMERS_SOAK_SEED``
replays one).
"""

from __future__ import annotations

import copy
import os
import random
import threading

import kubernetes.client
import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.api._errors import ApiError
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import ApiServer, eventually
from tests.support.informers import EventLog, make_informer, versions

SOAK_SECONDS = float(os.environ.get("PYINFORMERS_SOAK_SECONDS", "30"))
NAMESPACES = ("default", "kube-system", "kube-public")
NAMES = [f"cm-{i:02d}" for i in range(40)]
REFLECTOR = {"backoff_initial": 0.05, "backoff_max": 0.5, "stall_timeout": 1.5, "page_size": 25}

pytestmark = [pytest.mark.slow, pytest.mark.timeout(SOAK_SECONDS + 150)]


def _no_retry_client(server: ApiServer):
    """An ApiClient without urllib3's automatic retries (they would hide 429s and sleep)."""
    base = server.api_client()
    configuration = copy.copy(base.configuration)
    base.close()
    configuration.retries = False
    return kubernetes.client.ApiClient(configuration)


class Writer(threading.Thread):
    """Random creates, patches (data and the ``tier`` label) and deletes, ignoring failed requests."""

    def __init__(
        self, client: ResourceClient, rng: random.Random, stop: threading.Event, n: int
    ) -> None:
        super().__init__(name=f"test-soak-writer-{n}", daemon=True)
        self.client, self.rng, self.stop_event = client, rng, stop
        self.ops = self.failures = 0

    def run(self) -> None:
        rng = self.rng
        while not self.stop_event.is_set():
            namespace, name = rng.choice(NAMESPACES), rng.choice(NAMES)
            op = rng.random()
            try:
                if op < 0.35:
                    self.client.create(
                        {
                            "metadata": {"name": name, "labels": {"tier": rng.choice("xy")}},
                            "data": {"v": "0"},
                        },
                        namespace=namespace,
                    )
                elif op < 0.8:
                    self.client.patch(
                        name,
                        {
                            "metadata": {"labels": {"tier": rng.choice("xy")}},
                            "data": {"v": str(rng.random())},
                        },
                        namespace=namespace,
                    )
                else:
                    self.client.delete(name, namespace)
                self.ops += 1
            except ApiError:  # NotFound, AlreadyExists, injected 500/429: the chaos is the point
                self.failures += 1
            except Exception:  # a connection cut by a fault
                self.failures += 1


def _chaos(server: ApiServer, rng: random.Random, stop: threading.Event, log: list) -> None:
    faults = server.faults
    while not stop.is_set():
        choice = rng.choice(
            ["drop", "errors", "throttle", "compact", "stall", "flaky", "latency", "calm"]
        )
        log.append(choice)
        if choice == "drop":
            faults.drop_watches()
        elif choice == "errors":
            faults.error_rate = rng.uniform(0.2, 0.8)
        elif choice == "throttle":
            faults.throttle_rate, faults.retry_after = rng.uniform(0.2, 0.6), 1
        elif choice == "compact":
            server.compact()
        elif choice == "stall":
            faults.stall_watches = True
        elif choice == "flaky":
            faults.drop_watch_probability = 0.05
        elif choice == "latency":
            faults.latency = 0.02
        stop.wait(rng.uniform(0.2, 1.2))
        faults.reset()
        stop.wait(rng.uniform(0.1, 0.6))


def _expected(server: ApiServer, namespace=None, tier=None) -> dict[str, str]:
    objects = server.objects("configmaps", namespace=namespace)
    if tier is not None:
        objects = [o for o in objects if (o["metadata"].get("labels") or {}).get("tier") == tier]
    return versions(objects)


def test_caches_and_handlers_match_the_server_after_random_writes_and_faults():
    seed = int(os.environ.get("PYINFORMERS_SOAK_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    server = ApiServer(bookmark_interval=0.3, seed=seed)
    server.start()
    informer_client = server.api_client()
    writer_client = _no_retry_client(server)
    informers = []
    chaos_log: list[str] = []
    try:
        everything = make_informer(
            informer_client, CONFIGMAPS, name="soak-all", reflector_options=REFLECTOR
        )
        one_ns = make_informer(
            informer_client,
            CONFIGMAPS,
            name="soak-ns",
            namespace="kube-system",
            reflector_options=REFLECTOR,
        )
        tier_x = make_informer(
            informer_client,
            CONFIGMAPS,
            name="soak-tier",
            label_selector="tier=x",
            reflector_options=REFLECTOR,
        )
        informers = [everything, one_ns, tier_x]
        logs = {everything: [EventLog(), EventLog()], one_ns: [EventLog()], tier_x: [EventLog()]}
        registrations = []
        for informer, informer_logs in logs.items():
            for handler_log in informer_logs:
                registrations.append(
                    (informer, handler_log, informer.add_event_handler(handler_log))
                )
        everything.start()
        one_ns.start()
        # One informer starts during the chaos; a handler joins late too.
        stop = threading.Event()
        client = ResourceClient(writer_client, CONFIGMAPS)
        writers = [Writer(client, random.Random(rng.random()), stop, n) for n in range(2)]
        chaos = threading.Thread(
            target=_chaos,
            args=(server, random.Random(rng.random()), stop, chaos_log),
            name="test-soak-chaos",
            daemon=True,
        )
        for thread in (*writers, chaos):
            thread.start()
        stop.wait(SOAK_SECONDS / 3)
        tier_x.start()
        late = EventLog()
        registrations.append((everything, late, everything.add_event_handler(late)))
        stop.wait(SOAK_SECONDS * 2 / 3)
        stop.set()
        for thread in (*writers, chaos):
            thread.join(30)
            assert not thread.is_alive(), f"{thread.name} did not stop"
        server.faults.reset()

        context = f"seed={seed} chaos={chaos_log}"
        expected = {
            everything: _expected(server),
            one_ns: _expected(server, namespace="kube-system"),
            tier_x: _expected(server, tier="x"),
        }
        assert sum(w.ops for w in writers) > 50, (
            f"too few writes succeeded to mean anything; {context}"
        )
        for informer, want in expected.items():
            eventually(
                lambda: versions(informer.indexer.list()) == want,
                timeout=60,
                what=f"{informer.name} cache == server; {context}",
            )
            assert informer.has_synced()
        for informer, handler_log, registration in registrations:
            want = expected[informer]
            eventually(
                lambda: registration.backlog() == 0 and handler_log.state() == want,
                timeout=30,
                what=f"handler of {informer.name} consistent with the server; {context}",
            )
            assert registration.has_synced()
        stats = everything.reflector.stats
        assert stats.errors > 0, f"the chaos never hit the informer; {context}"
    finally:
        for informer in informers:
            assert informer.stop(timeout=5.0)
        writer_client.close()
        informer_client.close()
        server.stop()
