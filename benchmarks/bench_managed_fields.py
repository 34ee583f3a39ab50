"""What recording managedFields costs the embedded API server per write.

Every create, update and patch of the embedded server computes the fields
the write changed and records them in ``metadata.managedFields``, as
kube-apiserver does. This measures the CPU time per write of the REST layer
(no HTTP: the part the field manager adds to) for ~3 KB Pods -- a create,
then a merge patch changing one label and one container's image -- with
recording on and off (the baseline, measured in the same run), and the cost
of one server-side apply of the same Pod for comparison. Medians of several
rounds; the ratio is the figure to report.
"""

from __future__ import annotations

import statistics
import time

import orjson

from benchmarks.bench_apiserver import _pod
from pyinformers.testing import ApiServer

WRITES = 300
ROUNDS = 5


def _pods(server: ApiServer, tag: str, *, record: bool):
    """The round's Pods (named after ``tag``), with recording switched as asked."""
    server.rest.field_management.enabled = record
    for i in range(WRITES):
        pod = _pod(i)
        pod["metadata"]["name"] = f"{tag}-{i:05d}"
        yield i, pod


def _round(server: ApiServer, rt, *, record: bool, tag: str) -> float:
    rest = server.rest
    started = time.process_time()
    for i, pod in _pods(server, tag, record=record):
        rest.create(rt, "default", pod, field_manager="bench")
        patch = {
            "metadata": {"labels": {"round": tag}},
            "spec": {"containers": [{"name": "app", "image": f"app:{i}"}]},
        }
        rest.patch(
            rt,
            "default",
            pod["metadata"]["name"],
            orjson.dumps(patch),
            "application/strategic-merge-patch+json",
            field_manager="bench",
        )
    return (time.process_time() - started) / (2 * WRITES) * 1e6


def _apply_round(server: ApiServer, rt, tag: str) -> float:
    rest = server.rest
    started = time.process_time()
    for _, pod in _pods(server, tag, record=True):
        pod.pop("status")
        rest.apply(
            rt, "default", pod["metadata"]["name"], orjson.dumps(pod), manager="bench", force=False
        )
    return (time.process_time() - started) / WRITES * 1e6


def main() -> None:
    with ApiServer() as server:
        rt = server.registry.lookup("", "v1", "pods")
        without, with_, applies = [], [], []
        for r in range(ROUNDS):
            without.append(_round(server, rt, record=False, tag=f"off{r}"))
            with_.append(_round(server, rt, record=True, tag=f"on{r}"))
            applies.append(_apply_round(server, rt, f"apply{r}"))
    off, on, ap = statistics.median(without), statistics.median(with_), statistics.median(applies)
    print(
        f"CPU per write, REST layer, 3 KB Pods, median of {ROUNDS} rounds of {2 * WRITES} writes:"
    )
    print(f"  without managedFields  {off:8.0f} us")
    print(f"  with managedFields     {on:8.0f} us   ({on / off:.2f}x)")
    print(
        f"  server-side apply      {ap:8.0f} us   ({ap / off:.2f}x the write without managedFields)"
    )


if __name__ == "__main__":
    main()
