"""Rate limits: a token bucket that a worker and its clones share. One token per claimed
job; a job that is claimed but not run (its claim was lost, its queue was paused, the
worker stopped before it started) gives its token back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta


def _positive_int(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"{what} must be a whole number above 0, not {n!r}")
    return n


@dataclass(frozen=True)
class RateLimit:
    """`rate` jobs per `per`, with bursts of up to `burst_limit` (default: `rate`)."""

    rate: int
    per: timedelta
    burst_limit: int

    def __post_init__(self) -> None:
        _positive_int(self.rate, "rate")
        _positive_int(self.burst_limit, "burst_limit")
        if not isinstance(self.per, timedelta) or self.per <= timedelta(0):
            raise ValueError("per must be a positive timedelta")

    @classmethod
    def per_second(cls, n: int) -> RateLimit:
        return cls(_positive_int(n, "rate"), timedelta(seconds=1), n)

    @classmethod
    def per_minute(cls, n: int) -> RateLimit:
        return cls(_positive_int(n, "rate"), timedelta(minutes=1), n)

    @classmethod
    def per_hour(cls, n: int) -> RateLimit:
        return cls(_positive_int(n, "rate"), timedelta(hours=1), n)

    def with_burst_limit(self, n: int) -> RateLimit:
        return replace(self, burst_limit=_positive_int(n, "burst_limit"))

    @property
    def tokens_per_second(self) -> float:
        return self.rate / self.per.total_seconds()


class RateLimiter:
    """A token bucket: starts full (`burst_limit` tokens) and refills continuously at the
    limit's rate, computed lazily on each call. Thread-safe, so clones can share one."""

    def __init__(self, limit: RateLimit, monotonic: Callable[[], float] = time.monotonic):
        self.limit = limit
        self._monotonic = monotonic
        self._tokens = float(limit.burst_limit)
        self._updated = monotonic()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._monotonic()
        elapsed = max(0.0, now - self._updated)
        self._updated = now
        self._tokens = min(
            float(self.limit.burst_limit), self._tokens + elapsed * self.limit.tokens_per_second
        )

    def try_take(self, n: int) -> int:
        """Take up to `n` whole tokens; returns how many were taken."""
        with self._lock:
            self._refill()
            taken = max(0, min(n, int(self._tokens)))
            self._tokens -= taken
            return taken

    def refund(self, n: int = 1) -> None:
        """Give back tokens taken for jobs that did not run (never above the burst)."""
        if n <= 0:
            return
        with self._lock:
            self._refill()
            self._tokens = min(float(self.limit.burst_limit), self._tokens + n)

    def available(self) -> float:
        with self._lock:
            self._refill()
            return self._tokens
