"""Rate limiters, each on the fake clock: delays, forget, num_requeues, bad parameters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.clock import FakeClock
from pyinformers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)


# -- exponential ------------------------------------------------------------------------
def test_exponential_doubles_from_the_base_delay_per_failure():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert limiter.num_requeues("a") == 5


def test_exponential_is_capped_at_the_max_delay():
    limiter = ItemExponentialFailureRateLimiter(1.0, 10.0)
    assert [limiter.when("a") for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_exponential_reaches_1000_seconds_with_the_defaults_and_never_overflows():
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(2000)]
    assert delays[0] == 0.005
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * (2000 - 18)


def test_exponential_tracks_items_separately():
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 1.0
    assert limiter.num_requeues("a") == 2 and limiter.num_requeues("b") == 1


def test_exponential_forget_starts_the_item_afresh():
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    limiter.forget("never-seen")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1.0


@pytest.mark.parametrize(
    "base, cap, message",
    [
        (-0.1, 1.0, "base_delay must not be negative"),
        (0.1, -1.0, "max_delay must not be negative"),
        (2.0, 1.0, "must not exceed max_delay"),
        (float("nan"), 1.0, "base_delay must be a number"),
        ("5ms", 1.0, "base_delay must be a number"),
    ],
)
def test_exponential_rejects_bad_parameters(base, cap, message):
    with pytest.raises(ValueError, match=message):
        ItemExponentialFailureRateLimiter(base, cap)


@given(st.floats(0, 10), st.floats(0, 10), st.integers(1, 80))
def test_exponential_delays_never_decrease_and_never_pass_the_cap(base, extra, failures):
    limiter = ItemExponentialFailureRateLimiter(base, base + extra)
    delays = [limiter.when("k") for _ in range(failures)]
    assert delays == sorted(delays)
    assert all(base <= d <= base + extra for d in delays)


# -- fast / slow ------------------------------------------------------------------------
def test_fast_slow_gives_the_fast_delay_for_the_first_attempts_then_the_slow_one():
    limiter = ItemFastSlowRateLimiter(0.1, 5.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.1, 0.1, 0.1, 5.0, 5.0]
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.1


def test_fast_slow_with_no_fast_attempts_is_always_slow():
    limiter = ItemFastSlowRateLimiter(0.1, 5.0, 0)
    assert limiter.when("a") == 5.0


@pytest.mark.parametrize(
    "args, message",
    [
        ((-1.0, 1.0, 3), "fast_delay must not be negative"),
        ((1.0, -1.0, 3), "slow_delay must not be negative"),
        ((1.0, 2.0, -1), "max_fast_attempts must not be negative"),
        ((1.0, 2.0, 2.5), "max_fast_attempts must be an int"),
    ],
)
def test_fast_slow_rejects_bad_parameters(args, message):
    with pytest.raises(ValueError, match=message):
        ItemFastSlowRateLimiter(*args)


# -- token bucket -----------------------------------------------------------------------
def test_bucket_lets_a_burst_through_without_delay():
    limiter = BucketRateLimiter(10.0, 5, clock=FakeClock())
    assert [limiter.when(i) for i in range(5)] == [0.0] * 5


def test_bucket_reserves_the_next_token_for_each_call_after_the_burst():
    limiter = BucketRateLimiter(10.0, 2, clock=FakeClock())
    limiter.when("a")
    limiter.when("b")
    # Each call reserves a token 0.1 s after the previous one.
    assert [limiter.when(c) for c in "cde"] == pytest.approx([0.1, 0.2, 0.3])


def test_bucket_refills_at_qps_on_its_clock():
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 2, clock=clock)
    for item in "abcd":  # two tokens in debt: the next one is 0.3 s away
        limiter.when(item)
    clock.step(0.3)
    assert limiter.when("e") == pytest.approx(0.0, abs=1e-9)
    clock.step(60.0)  # refills to the burst, not beyond
    assert [limiter.when(i) for i in range(2)] == [0.0, 0.0]
    assert limiter.when("x") == pytest.approx(0.1)


def test_bucket_tracks_no_items():
    limiter = BucketRateLimiter(clock=FakeClock())
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


@pytest.mark.parametrize(
    "qps, burst, message",
    [
        (0, 1, "qps must be a positive number"),
        (-5.0, 1, "qps must be a positive number"),
        (float("nan"), 1, "qps must be a positive number"),
        (float("inf"), 1, "qps must be finite"),
        (10.0, 0, "burst must be an int of at least 1"),
        (10.0, 1.5, "burst must be an int of at least 1"),
    ],
)
def test_bucket_rejects_bad_parameters(qps, burst, message):
    with pytest.raises(ValueError, match=message):
        BucketRateLimiter(qps, burst)


@given(
    st.floats(0.5, 100.0),
    st.integers(1, 20),
    st.lists(st.floats(0.0, 2.0), min_size=1, max_size=40),
)
def test_bucket_never_grants_more_than_burst_plus_qps_times_elapsed(qps, burst, gaps):
    """Every token is granted at (call time + delay); in any window from the start
    the bucket hands out at most burst + qps * window tokens."""
    clock = FakeClock()
    start = clock.now()
    limiter = BucketRateLimiter(qps, burst, clock=clock)
    grants = []
    for gap in gaps:
        clock.step(gap)
        grants.append(clock.now() + limiter.when("k"))
    assert all(later >= earlier - 1e-9 for earlier, later in zip(grants, grants[1:]))
    for i, granted in enumerate(grants):
        assert i + 1 <= burst + qps * (granted - start) + 1e-6


# -- max of -----------------------------------------------------------------------------
def test_max_of_returns_the_longest_delay_and_asks_every_limiter():
    fast_slow = ItemFastSlowRateLimiter(0.5, 3.0, 1)
    exponential = ItemExponentialFailureRateLimiter(0.1, 100.0)
    limiter = MaxOfRateLimiter(fast_slow, exponential)
    assert [limiter.when("a") for _ in range(7)] == [0.5, 3.0, 3.0, 3.0, 3.0, 3.2, 6.4]
    assert fast_slow.num_requeues("a") == exponential.num_requeues("a") == 7
    assert limiter.num_requeues("a") == 7


def test_max_of_forget_forgets_in_every_limiter():
    one, two = ItemExponentialFailureRateLimiter(), ItemFastSlowRateLimiter(1, 2, 1)
    limiter = MaxOfRateLimiter(one, two)
    limiter.when("a")
    limiter.forget("a")
    assert one.num_requeues("a") == two.num_requeues("a") == 0


def test_max_of_needs_at_least_one_real_limiter():
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()
    with pytest.raises(ValueError, match="not a rate limiter"):
        MaxOfRateLimiter(ItemExponentialFailureRateLimiter(), 5)


# -- the default ------------------------------------------------------------------------
def test_default_controller_limiter_is_exponential_until_the_bucket_runs_dry():
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    assert isinstance(limiter, RateLimiter)
    assert limiter.when("a") == 0.005
    assert limiter.when("a") == 0.01
    for i in range(98):  # the rest of the 100-token burst
        limiter.when(f"other-{i}")
    # 10 qps: the next token is 0.1 s away, longer than "b"'s first backoff.
    assert limiter.when("b") == pytest.approx(0.1)
    assert limiter.num_requeues("b") == 1


def test_every_limiter_has_a_repr_showing_its_parameters():
    assert "base=0.005s max=1000.0s" in repr(ItemExponentialFailureRateLimiter())
    assert "qps=10.0 burst=100" in repr(BucketRateLimiter(clock=FakeClock()))
    assert "fast=1.0s slow=2.0s" in repr(ItemFastSlowRateLimiter(1.0, 2.0, 3))
    assert repr(default_controller_rate_limiter(clock=FakeClock())).startswith("<MaxOfRateLimiter")
