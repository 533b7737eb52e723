from __future__ import annotations

from datetime import timedelta

import pytest

from workers.api import RateLimit, RateLimiter, Throttle, ThrottleConfig


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("make", [RateLimit.per_second, RateLimit.per_minute, RateLimit.per_hour])
@pytest.mark.parametrize("n", [0, -1, 1.5, True, "3"])
def test_rate_must_be_a_positive_whole_number(make, n):
    with pytest.raises(ValueError):
        make(n)


def test_burst_defaults_to_the_rate_and_can_be_changed():
    limit = RateLimit.per_minute(30)
    assert (limit.rate, limit.per, limit.burst_limit) == (30, timedelta(minutes=1), 30)
    assert limit.with_burst_limit(5).burst_limit == 5
    assert limit.burst_limit == 30  # frozen: with_burst_limit returns a new limit
    with pytest.raises(ValueError):
        limit.with_burst_limit(0)


def test_bucket_starts_full_and_refills_at_the_rate():
    clock = FakeMonotonic()
    bucket = RateLimiter(RateLimit.per_second(3), monotonic=clock)
    assert bucket.try_take(10) == 3
    assert bucket.try_take(1) == 0
    clock.now += 0.34  # one token every 333 ms
    assert bucket.try_take(10) == 1
    clock.now += 10  # never above the burst
    assert bucket.try_take(10) == 3


def test_refunds_never_exceed_the_burst():
    clock = FakeMonotonic()
    bucket = RateLimiter(RateLimit.per_hour(2), monotonic=clock)
    assert bucket.try_take(2) == 2
    bucket.refund(1)
    assert bucket.try_take(5) == 1
    bucket.refund(10)
    assert bucket.try_take(5) == 2


def test_throttle_hands_out_at_most_its_permits():
    throttle = Throttle(2)
    assert throttle.try_acquire(10) == 2
    assert throttle.try_acquire(1) == 0
    throttle.release(1)
    assert throttle.try_acquire(5) == 1
    throttle.release(5)  # never above max_concurrent
    assert throttle.free == 2


@pytest.mark.parametrize("field", ["max_concurrent", "rate_per_minute"])
@pytest.mark.parametrize("value", [0, -2, 1.5, True])
def test_throttle_config_validates(field, value):
    with pytest.raises(ValueError):
        ThrottleConfig(**{field: value})


def test_throttle_rate_per_minute_is_a_rate_limit():
    assert ThrottleConfig(rate_per_minute=6).rate_limit == RateLimit.per_minute(6)
    assert ThrottleConfig(max_concurrent=2).rate_limit is None
    assert ThrottleConfig(rate_per_minute=6, enabled=False).rate_limit is None
