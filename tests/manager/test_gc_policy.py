"""The GC policy: a nestable pause, and steady-state tuning a Manager applies and undoes."""

from __future__ import annotations

import gc

import pytest

from pyinformers import _gc_policy as gc_policy
from pyinformers.manager import Manager


@pytest.fixture
def gc_state():
    """Restore the collector exactly as it was, whatever a test does to it."""
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()


def test_tune_for_caches_sets_rare_full_collections_and_returns_what_it_replaced(gc_state):
    gc.set_threshold(700, 10, 10)
    previous = gc_policy.tune_for_caches()
    assert previous == (700, 10, 10)
    assert gc.get_threshold() == gc_policy.RARE_FULL_COLLECTIONS
    gc_policy.restore(previous)
    assert gc.get_threshold() == (700, 10, 10)


def test_bad_thresholds_are_refused(gc_state):
    for bad in [(1, 2), (1, 2, -3), (1.5, 2, 3)]:
        with pytest.raises(ValueError, match="three non-negative integers"):
            gc_policy.tune_for_caches(bad)


def test_freeze_moves_live_objects_out_of_reach_and_restore_brings_them_back(gc_state):
    cache = [{"metadata": {"name": str(i)}, "spec": {"items": [i]}} for i in range(1000)]
    frozen = gc_policy.freeze_synced_caches()
    # Objects another thread releases after the freeze leave the permanent generation, so
    # the count may only shrink from what freeze reported; the 4,000 containers held here stay.
    assert 4 * len(cache) <= gc.get_freeze_count() <= frozen
    collectable = {id(o) for o in gc.get_objects()}
    assert not any(id(entry) in collectable for entry in cache)
    gc_policy.restore(gc.get_threshold())
    assert gc.get_freeze_count() == 0
    del cache


def test_a_manager_tunes_the_gc_while_it_runs_and_restores_it_when_it_stops(gc_state, api_server):
    from pyinformers.resources import CONFIGMAPS

    gc.set_threshold(700, 10, 10)
    manager = Manager(api_client=api_server.api_client(), metrics_port=0, health_port=0)
    manager.factory.informer(CONFIGMAPS)
    manager.start()
    try:
        assert gc.get_threshold() == gc_policy.RARE_FULL_COLLECTIONS
        assert gc.get_freeze_count() > 0
    finally:
        assert manager.stop(timeout=5)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_manager_told_not_to_leaves_the_gc_alone(gc_state, api_server):
    from pyinformers.resources import CONFIGMAPS

    gc.set_threshold(700, 10, 10)
    manager = Manager(
        api_client=api_server.api_client(), metrics_port=0, health_port=0, tune_gc=False
    )
    manager.factory.informer(CONFIGMAPS)
    manager.start()
    try:
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
    finally:
        assert manager.stop(timeout=5)


def test_leaving_a_pause_moves_what_it_made_to_the_oldest_generation_untraversed(gc_state):
    gc.enable()
    with gc_policy.gc_paused():
        cache = [{"metadata": {"name": str(i)}} for i in range(1000)]
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in cache)  # the first collection after the pause skips them
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    del cache
