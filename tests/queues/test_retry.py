from __future__ import annotations

import random
from datetime import timedelta

import pytest

from queues.api import RetryStrategy

S = timedelta(seconds=1)


def seconds(strategy, attempt, rng=None):
    return strategy.delay(attempt, rng).total_seconds()


def test_fixed():
    strategy = RetryStrategy.fixed(30 * S)
    assert [seconds(strategy, n) for n in (1, 2, 5)] == [30, 30, 30]


def test_linear_is_capped():
    strategy = RetryStrategy.linear(10 * S, 5 * S, max_delay=22 * S)
    assert [seconds(strategy, n) for n in (1, 2, 3, 4)] == [10, 15, 20, 22]


def test_exponential_without_jitter():
    strategy = RetryStrategy.exponential(2 * S, multiplier=3, max_delay=100 * S)
    assert [seconds(strategy, n) for n in (1, 2, 3, 4, 5)] == [2, 6, 18, 54, 100]


def test_exponential_jitter_stays_within_its_fraction():
    strategy = RetryStrategy.exponential(10 * S, jitter=0.2)
    rng = random.Random(7)
    delays = [seconds(strategy, 3, rng) for _ in range(500)]
    assert min(delays) >= 32 and max(delays) <= 48
    assert max(delays) - min(delays) > 8, "jitter spreads the delays"


def test_fibonacci():
    strategy = RetryStrategy.fibonacci(S, max_delay=10 * S)
    assert [seconds(strategy, n) for n in range(1, 8)] == [1, 1, 2, 3, 5, 8, 10]


def test_round_trip_through_json():
    for strategy in (
        RetryStrategy.fixed(3 * S),
        RetryStrategy.linear(S, S, 9 * S),
        RetryStrategy.exponential(S, 2, 60 * S, 0.1),
        RetryStrategy.fibonacci(S),
    ):
        assert RetryStrategy.from_dict(strategy.to_dict()) == strategy


@pytest.mark.parametrize(
    "build",
    [
        lambda: RetryStrategy.fixed(-S),
        lambda: RetryStrategy.exponential(S, multiplier=0.5),
        lambda: RetryStrategy.exponential(S, jitter=2),
        lambda: RetryStrategy.from_dict({"type": "nope"}),
    ],
)
def test_bad_strategies_are_refused(build):
    with pytest.raises(ValueError):
        build()
