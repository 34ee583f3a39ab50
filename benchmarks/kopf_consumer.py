"""The kopf anchor of the pipeline benchmark: a kopf operator with a no-op ``on.event`` handler for Pods.

Runs inside its own virtual environment (``benchmarks/.venv-kopf``, made by
the benchmark), so it imports nothing from pyinformers. kopf lists the
namespace first (the handler sees every listed Pod with event type None),
then watches. Once the handler has seen every listed Pod, the clocks start
and the server's gate is released; they stop when the handler sees the last
event's resourceVersion. Prints ``RESULT {json}`` and exits.

Usage: ``kopf run --standalone --namespace NS kopf_consumer.py`` with
``BENCH_PLAN`` (the plan JSON), ``BENCH_SERVER`` (its URL) and ``KUBECONFIG``
pointing at the benchmark server in the environment (the harness does this).
"""

from __future__ import annotations

import json
import os
import resource
import time
import urllib.request

import kopf

PLAN = json.loads(os.environ["BENCH_PLAN"])
SERVER = os.environ["BENCH_SERVER"]
((NAMESPACE, INFO),) = PLAN["namespaces"].items()
_state = {"listed": 0, "events": 0, "cpu0": 0.0, "wall0": 0.0, "started": time.perf_counter()}


def _release_gate() -> None:
    request = urllib.request.Request(f"{SERVER}/_bench/go", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    settings.posting.enabled = False  # nothing to post to: the benchmark server has no Events
    settings.watching.server_timeout = 3600


@kopf.on.event("", "v1", "pods")
def on_pod(event: dict, **_: object) -> None:
    obj = event["object"]
    if event["type"] is None:  # the initial listing
        _state["listed"] += 1
        if _state["listed"] == INFO["pods"]:
            _state["sync_seconds"] = time.perf_counter() - _state["started"]
            _state["cpu0"] = time.process_time()
            _state["wall0"] = time.perf_counter()
            _release_gate()
        return
    _state["events"] += 1
    md = obj["metadata"]
    if (
        f"{md['namespace']}/{md['name']}" == INFO["last_key"]
        and md["resourceVersion"] == INFO["last_rv"]
    ):
        result = {
            "wall": time.perf_counter() - _state["wall0"],
            "cpu": time.process_time() - _state["cpu0"],
            "sync_seconds": _state["sync_seconds"],
            "handled_events": _state["events"],
            "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }
        print("RESULT " + json.dumps(result), flush=True)
        os._exit(0)
