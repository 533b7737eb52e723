"""Throttles: `max_concurrent` bounds the jobs that a worker and its clones hold (claimed
but not started) or run at once; `rate_per_minute` adds a rate limit. A worker's clones
share its throttle (`Worker.clone`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from workers.runtime.rate_limit import RateLimit


@dataclass(frozen=True)
class ThrottleConfig:
    max_concurrent: int | None = None
    rate_per_minute: int | None = None
    enabled: bool = True

    def __post_init__(self) -> None:
        for name in ("max_concurrent", "rate_per_minute"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise ValueError(f"{name} must be a whole number above 0 or None, not {value!r}")

    @property
    def rate_limit(self) -> RateLimit | None:
        if not self.enabled or self.rate_per_minute is None:
            return None
        return RateLimit.per_minute(self.rate_per_minute)


class Throttle:
    """A counting semaphore that can be taken several permits at a time without blocking."""

    def __init__(self, max_concurrent: int) -> None:
        self.max_concurrent = max_concurrent
        self._free = max_concurrent
        self._lock = threading.Lock()

    def try_acquire(self, n: int) -> int:
        """Take up to `n` permits; returns how many were taken."""
        with self._lock:
            taken = max(0, min(n, self._free))
            self._free -= taken
            return taken

    def release(self, n: int = 1) -> None:
        if n <= 0:
            return
        with self._lock:
            self._free = min(self.max_concurrent, self._free + n)

    @property
    def free(self) -> int:
        with self._lock:
            return self._free
