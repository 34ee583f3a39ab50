"""The sampled estimate of a cache's memory."""

from __future__ import annotations

import gc
import random
import tracemalloc

import orjson
import pytest

from pyinformers.cache import Indexer, default_indexers
from pyinformers.cache._memory import CacheMemory, estimate_cache_memory, human_bytes, object_bytes


def secret(i: int, size: int) -> dict:
    return {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {
            "name": f"s{i:05d}",
            "namespace": "ns",
            "uid": f"uid-{i}",
            "resourceVersion": str(i),
            "labels": {"app": "web", "index": str(i)},
        },
        "data": {"key": "x" * size},
        "type": "Opaque",
    }


def fill(n: int, size: int) -> Indexer:
    raws = [orjson.dumps(secret(i, size)) for i in range(n)]
    idx = Indexer(default_indexers())
    for raw in raws:
        idx.add(orjson.loads(raw))
    return idx


def test_an_empty_cache_is_estimated_at_zero():
    assert estimate_cache_memory(Indexer()) == CacheMemory(0, 0, 0)


def test_the_estimate_is_within_a_fifth_of_what_tracemalloc_measures():
    raws = [orjson.dumps(secret(i, 2000)) for i in range(2000)]
    idx = Indexer(default_indexers())
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for raw in raws:
            idx.add(orjson.loads(raw))
        traced = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimate = estimate_cache_memory(idx, rng=random.Random(1))
    assert estimate.objects == 2000 and estimate.sampled == 64
    assert 0.8 * traced <= estimate.bytes <= 1.2 * traced


def test_bigger_objects_are_estimated_bigger_in_proportion():
    small = estimate_cache_memory(fill(200, 100)).per_object
    big = estimate_cache_memory(fill(200, 16_000)).per_object
    assert 15_000 < big - small < 17_500


def test_a_small_cache_is_measured_whole():
    assert estimate_cache_memory(fill(10, 10)).sampled == 10


def test_a_sample_must_hold_one_object():
    with pytest.raises(ValueError, match="sample"):
        estimate_cache_memory(Indexer(), sample=0)


def test_the_estimate_reads_as_one_line():
    assert str(CacheMemory(48_211, 310_400_000, 64)) == "48,211 objects, about 310 MB"


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (999, "999 B"),
        (1500, "1.5 KB"),
        (12_300, "12 KB"),
        (310_400_000, "310 MB"),
        (1_400_000_000, "1.4 GB"),
    ],
)
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_a_value_reachable_twice_in_one_object_counts_once():
    shared = "v" * 1000
    assert object_bytes({"a": shared, "b": shared}) < object_bytes({"a": shared, "b": "w" * 1000})
