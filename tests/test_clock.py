"""The fake clock wakes exactly the waiters whose time has come; the real one waits for real."""

from __future__ import annotations

import threading

import pytest

from pyinformers.clock import REAL_CLOCK, FakeClock

JOIN = 10.0  # real seconds a test may wait for a thread before it fails


def _start(target) -> threading.Thread:
    thread = threading.Thread(target=target, name="test-clock-waiter", daemon=True)
    thread.start()
    return thread


def test_fake_clock_starts_where_told_and_moves_only_on_step():
    clock = FakeClock(start=5.0)
    assert clock.now() == 5.0
    clock.step(2.5)
    assert clock.now() == 7.5


def test_fake_clock_refuses_to_go_backwards():
    clock = FakeClock()
    with pytest.raises(ValueError, match="backwards"):
        clock.step(-1)
    with pytest.raises(ValueError, match="backwards"):
        clock.set(clock.now() - 1)


def test_wall_time_moves_with_monotonic_time():
    clock = FakeClock()
    wall = clock.time()
    clock.step(10)
    assert clock.time() == pytest.approx(wall + 10)


def test_step_wakes_only_waiters_whose_deadline_has_come():
    clock = FakeClock()
    results: dict[str, bool] = {}
    conds = {name: threading.Condition() for name in ("short", "long")}

    def waiter(name: str, timeout: float):
        def run():
            with conds[name]:
                results[name] = clock.wait(conds[name], timeout)

        return run

    short = _start(waiter("short", 1.0))
    long = _start(waiter("long", 5.0))
    clock.block_until_waiters(2)
    clock.step(1.0)
    short.join(5)
    assert results == {"short": False}
    assert clock.waiter_count() == 1
    clock.step(4.0)
    long.join(5)
    assert results == {"short": False, "long": False}


def test_notify_before_the_deadline_returns_true_and_unregisters():
    clock = FakeClock()
    cond = threading.Condition()
    result = []

    def run():
        with cond:
            result.append(clock.wait(cond, 30))

    thread = _start(run)
    clock.block_until_waiters(1)
    with cond:
        cond.notify_all()
    thread.join(5)
    assert result == [True]
    assert clock.waiter_count() == 0


def test_zero_timeout_does_not_block():
    clock = FakeClock()
    cond = threading.Condition()
    with cond:
        assert clock.wait(cond, 0) is False
    assert clock.wait_event(threading.Event(), 0) is False


def test_wait_event_returns_when_set_or_when_fake_time_passes():
    clock = FakeClock()
    event = threading.Event()
    result = []
    thread = _start(lambda: result.append(clock.wait_event(event, 10)))
    clock.block_until_waiters(1)
    event.set()
    thread.join(5)
    assert result == [True]

    quiet = threading.Event()
    thread = _start(lambda: result.append(clock.wait_event(quiet, 10)))
    clock.block_until_waiters(1)
    clock.step(10)
    thread.join(5)
    assert result == [True, False]


def test_sleep_returns_after_enough_steps():
    clock = FakeClock()
    done = threading.Event()
    thread = _start(lambda: (clock.sleep(3), done.set()))
    clock.block_until_waiters(1)
    clock.step(2)
    assert not done.is_set() or clock.now() >= 3  # not yet due
    clock.block_until_waiters(1)
    clock.step(1)
    thread.join(5)
    assert done.is_set()


def test_block_until_waiters_times_out_loudly():
    with pytest.raises(TimeoutError, match="expected 1 waiter"):
        FakeClock().block_until_waiters(1, timeout=0.05)


def test_real_clock_is_monotonic_and_waits_for_real():
    first = REAL_CLOCK.now()
    cond = threading.Condition()
    with cond:
        assert REAL_CLOCK.wait(cond, 0.01) is False
    assert REAL_CLOCK.now() > first
    assert REAL_CLOCK.wait_event(threading.Event(), 0.001) is False


# -- timers -------------------------------------------------------------------------------------


def test_the_fake_clock_fires_timers_itself_in_deadline_order_when_stepped():
    clock = FakeClock()
    fired = []
    clock.call_later(2.0, lambda: fired.append("b"))
    clock.call_later(1.0, lambda: fired.append("a"))
    late = clock.call_later(5.0, lambda: fired.append("never"))
    assert clock.timer_count() == 3 and clock.next_timer_deadline() == clock.now() + 1.0
    clock.step(0.5)
    assert fired == []
    clock.step(2.0)  # no polling: the timers ran inside step()
    assert fired == ["a", "b"]
    assert late.cancel() is True and late.cancel() is False
    clock.step(10)
    assert fired == ["a", "b"] and clock.timer_count() == 0


def test_timers_are_not_waiters_and_waiters_are_not_timers():
    clock = FakeClock()
    clock.call_later(5.0, lambda: None)
    assert clock.waiter_count() == 0 and clock.next_deadline() is None
    with pytest.raises(TimeoutError, match="expected 1 waiter"):
        clock.block_until_waiters(1, timeout=0.05)
    cond = threading.Condition()

    def wait():
        with cond:
            clock.wait(cond, 3.0)

    thread = _start(wait)
    clock.block_until_waiters(1)
    assert clock.timer_count() == 1 and clock.next_timer_deadline() == clock.now() + 5.0
    assert clock.next_deadline() == clock.now() + 3.0
    clock.step(3.0)
    thread.join(5)
    assert clock.timer_count() == 1


def test_a_timer_runs_at_its_own_deadline_and_one_it_makes_inside_the_step_runs_too():
    clock = FakeClock(start=0.0)
    seen: list[tuple[str, float]] = []

    def first():
        seen.append(("first", clock.now()))
        clock.call_later(2.0, lambda: seen.append(("made by first", clock.now())))

    clock.call_later(1.0, first)
    clock.call_later(4.0, lambda: seen.append(("last", clock.now())))
    clock.step(10.0)
    assert seen == [("first", 1.0), ("made by first", 3.0), ("last", 4.0)]
    assert clock.now() == 10.0


def test_timers_with_one_deadline_fire_in_the_order_they_were_made():
    clock = FakeClock()
    fired = []
    for name in "abcde":
        clock.call_later(1.0, lambda name=name: fired.append(name))
    clock.step(1.0)
    assert fired == list("abcde")


def test_a_zero_delay_timer_fires_at_the_next_step_not_inside_call_later():
    clock = FakeClock()
    fired = []
    clock.call_later(0, lambda: fired.append("now"))
    clock.call_later(-3, lambda: fired.append("past"))
    assert fired == []
    clock.step(0)
    assert fired == ["now", "past"]


def test_block_until_timers_waits_for_a_timer_armed_by_another_thread():
    clock = FakeClock()
    thread = _start(lambda: clock.call_later(1.0, lambda: None))
    clock.block_until_timers(1)
    thread.join(5)
    with pytest.raises(TimeoutError, match="expected 2 timer"):
        clock.block_until_timers(2, timeout=0.05)


def test_many_cancelled_fake_timers_do_not_pile_up():
    clock = FakeClock()
    handles = [clock.call_later(i + 1, lambda: None) for i in range(500)]
    for handle in handles[:-1]:
        assert handle.cancel()
    assert clock.timer_count() == 1
    assert len(clock._timers._heap) < 300  # cancelled entries are dropped in bulk


def test_a_fired_fake_timer_cannot_be_cancelled_and_a_failing_callback_is_contained(caplog):
    clock = FakeClock()
    handle = clock.call_later(1, lambda: 1 / 0)
    after = []
    clock.call_later(2, lambda: after.append(True))
    clock.step(2)
    assert handle.cancel() is False
    assert "timer callback" in caplog.text
    assert after == [True]  # the failure stopped nothing behind it


def test_the_real_clock_fires_a_timer_on_its_own_thread_and_cancels_one():
    fired = threading.Event()
    REAL_CLOCK.call_later(0.01, fired.set)
    assert fired.wait(5)
    never = threading.Event()
    handle = REAL_CLOCK.call_later(30, never.set)
    assert handle.cancel() is True and handle.cancel() is False
    assert not never.is_set()


def test_the_real_clock_serves_many_timers_with_one_thread_in_deadline_order():
    fired: list[int] = []
    done = threading.Event()
    release = threading.Event()
    # The first timer holds the one timer thread until every other timer is made (and half
    # cancelled): however loaded the machine, they are all due by then and must fire in order.
    REAL_CLOCK.call_later(0, lambda: release.wait(JOIN))
    handles = [
        REAL_CLOCK.call_later(((i * 37) % 300) * 0.0001, lambda i=i: fired.append(i))
        for i in range(300)
    ]
    REAL_CLOCK.call_later(0.05, done.set)
    assert [t.name for t in threading.enumerate()].count("pyinformers-clock-timers") == 1
    for handle in handles[::2]:
        assert handle.cancel()
    release.set()
    assert done.wait(JOIN)
    # The earliest deadline first (ties: the order made); the cancelled never.
    expected = sorted(range(1, 300, 2), key=lambda i: (handles[i].deadline, i))
    assert fired == expected and expected != sorted(expected)


def test_a_real_timer_made_by_a_callback_and_one_made_earlier_than_the_armed_one_both_fire():
    order: list[str] = []
    done = threading.Event()
    late = REAL_CLOCK.call_later(
        5.0, lambda: order.append("late")
    )  # the thread sleeps for this one ...

    def early():
        order.append("early")
        REAL_CLOCK.call_later(0.001, done.set)

    REAL_CLOCK.call_later(0.01, early)  # ... and is woken for an earlier one
    assert done.wait(5)
    assert order == ["early"]
    late.cancel()
