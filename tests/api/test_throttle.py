"""The client-side throttle: a QPS/burst token bucket in front of every request of one ApiClient."""

import pytest

from pyinformers.api import ResourceClient, TokenBucket, client_throttle, set_client_throttle
from pyinformers.manager import Manager, Operator
from pyinformers.resources import CONFIGMAPS


class SteppingClock:
    """A clock whose sleep moves time on at once, recording each sleep."""

    def __init__(self) -> None:
        self.t = 100.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def test_a_full_bucket_lets_a_burst_through_then_one_request_per_one_over_qps():
    clock = SteppingClock()
    bucket = TokenBucket(10, 3, clock=clock)
    assert [bucket.wait() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.wait() == pytest.approx(0.1)
    assert bucket.wait() == pytest.approx(0.1)
    clock.t += 10  # idle: the bucket refills to its burst, no more
    assert [bucket.wait() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_callers_that_find_it_empty_wait_in_turn_and_the_rate_holds_over_any_window():
    clock = SteppingClock()
    bucket = TokenBucket(5, 1, clock=clock)
    bucket.wait()
    delays = [bucket._reserve() for _ in range(4)]  # four callers arrive at the same moment
    assert delays == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert not bucket.try_accept()
    clock.t += 0.8 + 0.2
    assert bucket.try_accept()


@pytest.mark.parametrize("qps, burst", [(0, 1), (-1, 1), (5, 0)])
def test_a_bucket_refuses_a_rate_or_burst_that_lets_nothing_through(qps, burst):
    with pytest.raises(ValueError):
        TokenBucket(qps, burst)


def test_every_request_of_a_throttled_client_takes_a_token_and_others_are_untouched(api_server):
    throttled, free = api_server.api_client(), api_server.api_client()
    clock = SteppingClock()
    try:
        set_client_throttle(throttled, TokenBucket(50, 1, clock=clock))
        configmaps = ResourceClient(throttled, CONFIGMAPS)
        configmaps.create({"metadata": {"name": "a"}}, "default")  # the burst
        configmaps.patch("a", {"data": {"k": "v"}}, "default")  # a write waits ...
        configmaps.list("default")  # ... and so does a read
        assert clock.slept == pytest.approx([0.02, 0.02])
        assert client_throttle(free) is None
        ResourceClient(free, CONFIGMAPS).list("default")
        assert len(clock.slept) == 2
        set_client_throttle(throttled, None)
        assert client_throttle(throttled) is None
    finally:
        throttled.close()
        free.close()


def test_the_manager_throttles_its_client_only_when_asked(api_server):
    off = Manager(api_client=api_server.api_client(), metrics_port=0, health_port=0)
    on = Manager(api_client=api_server.api_client(), metrics_port=0, health_port=0, kube_api_qps=20)
    try:
        assert client_throttle(off.api_client) is None
        bucket = client_throttle(on.api_client)
        assert bucket is not None and (bucket.qps, bucket.burst) == (20.0, 30)
    finally:
        off.api_client.close()
        on.api_client.close()


def test_the_operator_flags_map_onto_the_managers_throttle():
    operator = Operator("op", build=lambda factory, recorder, options: [])
    kwargs = operator.manager_options(
        operator.parse(["--kube-api-qps", "20", "--kube-api-burst", "40"], environ={})
    )
    assert (kwargs["kube_api_qps"], kwargs["kube_api_burst"]) == (20.0, 40)
    assert "kube_api_qps" not in operator.manager_options(operator.parse([], environ={}))
