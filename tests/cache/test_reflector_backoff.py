"""Backoff: jittered exponential delays, capped, forgotten after a quiet stretch."""

from __future__ import annotations

import random

import pytest

from pyinformers.cache._backoff import Backoff
from pyinformers.clock import FakeClock


def test_delays_double_from_the_initial_value_up_to_the_maximum():
    backoff = Backoff(initial=0.8, maximum=30.0, jitter=0.0, clock=FakeClock())
    assert [backoff.next() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_jitter_stretches_each_delay_by_at_most_the_jitter_fraction_and_never_past_the_maximum():
    backoff = Backoff(initial=1.0, maximum=4.0, jitter=0.5, clock=FakeClock(), rng=random.Random(3))
    delays = [backoff.next() for _ in range(6)]
    assert 1.0 <= delays[0] < 1.5 and 2.0 <= delays[1] < 3.0
    assert all(d <= 4.0 for d in delays)


def test_a_quiet_stretch_resets_the_sequence():
    clock = FakeClock()
    backoff = Backoff(initial=1.0, maximum=8.0, jitter=0.0, reset_after=60.0, clock=clock)
    assert [backoff.next() for _ in range(3)] == [1.0, 2.0, 4.0]
    clock.step(59)
    assert backoff.next() == 8.0
    clock.step(60)
    assert backoff.peek() == 1.0
    assert backoff.next() == 1.0


def test_reset_forgets_at_once():
    backoff = Backoff(initial=0.5, maximum=8.0, jitter=0.0, clock=FakeClock())
    backoff.next()
    backoff.next()
    backoff.reset()
    assert backoff.failures == 0 and backoff.next() == 0.5


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0}, {"initial": 5, "maximum": 1}, {"factor": 0.5}, {"jitter": -1}]
)
def test_bad_parameters_are_rejected(kwargs):
    with pytest.raises(ValueError):
        Backoff(**kwargs)
