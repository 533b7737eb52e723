"""Per-queue rates: `queue_config(name, rate=(N, seconds))`, at most N jobs of the queue
claimed in each window of that many seconds, across every process and host. A bucket of N
tokens in the queue's `QueueConfig` row, refilled and spent in the limited claim (`limits`);
windows aligned to the Unix epoch. See docs/design/engine.md ("Limits and rates").
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from queues.exceptions import InvalidQueueConfig

#: The most jobs of a window.
MAX_RATE = 1_000_000
#: The window's length, in seconds: from a hundredth of a second to a week.
MIN_PERIOD, MAX_PERIOD = 0.01, 7 * 86_400.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def check_rate(value: object) -> tuple[int, float] | None:
    """`rate` is None (no rate) or a pair (jobs, per seconds): jobs a whole number from 1
    to MAX_RATE, the seconds a number from MIN_PERIOD to MAX_PERIOD."""
    if value is None:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InvalidQueueConfig(
            f"rate must be a pair (jobs, per seconds), e.g. (10, 60), or None; not {value!r}"
        )
    jobs, seconds = value
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_RATE:
        raise InvalidQueueConfig(
            f"a rate's jobs must be a whole number from 1 to {MAX_RATE}; not {jobs!r}"
        )
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or not MIN_PERIOD <= seconds <= MAX_PERIOD
    ):
        raise InvalidQueueConfig(
            f"a rate's seconds must be a number from {MIN_PERIOD} to {MAX_PERIOD:g}; "
            f"not {seconds!r}"
        )
    return (jobs, float(seconds))


def window_start(now: datetime, period: float) -> datetime:
    """The start of the window of `period` seconds that `now` falls in."""
    elapsed = (now - _EPOCH).total_seconds()
    return _EPOCH + timedelta(seconds=math.floor(elapsed / period) * period)


def tokens_at(config, now: datetime) -> tuple[int, datetime]:
    """The tokens left at `now` in the bucket of a config row with a rate, and the window
    they are of: the row's own, or a full bucket if `now` is in a later window."""
    current = window_start(now, config.rate_period)
    refilled = config.rate_refilled_at
    if refilled is not None and current <= refilled:
        return min(config.rate_tokens, config.rate_limit), refilled
    return config.rate_limit, current


def next_window(config, now: datetime) -> datetime:
    """When the window after `now`'s starts (a rate's next refill)."""
    return window_start(now, config.rate_period) + timedelta(seconds=config.rate_period)
