"""Worker settings: builder and keyword forms, validation, clones sharing limits."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues.api import JobQueue
from workers.api import RateLimit, ThrottleConfig, Worker


def handler(job):
    return None


def test_keyword_arguments_are_the_same_settings_as_the_builder():
    built = (
        Worker(JobQueue(), "emails", handler)
        .with_poll_interval(timedelta(milliseconds=20))
        .with_batch_size(8)
        .with_batch_concurrency(3)
        .with_lease_duration(timedelta(seconds=30))
        .with_shutdown_grace_period(timedelta(seconds=10))
    )
    keywords = Worker(
        JobQueue(),
        "emails",
        handler,
        poll_interval=timedelta(milliseconds=20),
        batch_size=8,
        batch_concurrency=3,
        lease_duration=timedelta(seconds=30),
        shutdown_grace_period=timedelta(seconds=10),
    )
    assert built.settings() == keywords.settings()
    assert built.settings()["batch_size"] == 8


@pytest.mark.parametrize(
    "call",
    [
        lambda w: w.with_batch_size(0),
        lambda w: w.with_batch_size(1001),
        lambda w: w.with_batch_concurrency(0),
        lambda w: w.with_poll_interval(timedelta(0)),
        lambda w: w.with_lease_duration(timedelta(seconds=-1)),
        lambda w: w.with_lease_duration(30),
        lambda w: w.with_shutdown_grace_period(timedelta(seconds=-1)),
    ],
)
def test_bad_settings_raise_value_error(call):
    with pytest.raises(ValueError):
        call(Worker(JobQueue(), "emails", handler))


def test_bad_queue_name_or_handler():
    with pytest.raises(ValueError):
        Worker(JobQueue(), "", handler)
    with pytest.raises(TypeError):
        Worker(JobQueue(), "emails", "not callable")


def test_clones_share_the_rate_limiter_and_the_throttle():
    worker = (
        Worker(JobQueue(), "emails", handler)
        .with_rate_limit(RateLimit.per_second(3))
        .with_throttle_config(ThrottleConfig(max_concurrent=2, rate_per_minute=60))
    )
    twin = worker.clone()
    assert twin.rate_limiter is worker.rate_limiter
    assert twin.throttle is worker.throttle
    assert twin.throttle_limiter is worker.throttle_limiter
    assert twin.stats is not worker.stats
    assert worker.throttle.try_acquire(5) == 2
    assert twin.throttle.try_acquire(1) == 0
