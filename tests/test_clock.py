"""The fake clock wakes exactly the waiters whose time has come; the real one waits for real."""

from __future__ import annotations

import threading

import pytest

from pyinformers.clock import REAL_CLOCK, FakeClock


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
    from pyinformers.clock import FakeClock

    clock = FakeClock()
    fired = []
    clock.call_later(2.0, lambda: fired.append("b"))
    clock.call_later(1.0, lambda: fired.append("a"))
    late = clock.call_later(5.0, lambda: fired.append("never"))
    assert clock.waiter_count() == 3
    clock.step(0.5)
    assert fired == []
    clock.step(2.0)  # no polling: the timers ran inside step()
    assert fired == ["a", "b"]
    assert late.cancel() is True and late.cancel() is False
    clock.step(10)
    assert fired == ["a", "b"] and clock.waiter_count() == 0


def test_a_fired_fake_timer_cannot_be_cancelled_and_a_failing_callback_is_contained(caplog):
    from pyinformers.clock import FakeClock

    clock = FakeClock()
    handle = clock.call_later(1, lambda: 1 / 0)
    clock.step(1)
    assert handle.cancel() is False
    assert "timer callback" in caplog.text


def test_the_real_clock_fires_a_timer_on_its_own_thread_and_cancels_one():
    import threading

    from pyinformers.clock import REAL_CLOCK

    fired = threading.Event()
    REAL_CLOCK.call_later(0.01, fired.set)
    assert fired.wait(5)
    never = threading.Event()
    handle = REAL_CLOCK.call_later(30, never.set)
    assert handle.cancel() is True and handle.cancel() is False
    assert not never.is_set()
