"""Clocks. The queue reads time from a clock so that tests can move it instead of sleeping:
`SystemClock` is the wall clock, `MockClock` moves only when told to.
See docs/design/vocabulary.md."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from django.utils import timezone


class SystemClock:
    """Wall-clock UTC time."""

    def now(self) -> datetime:
        return timezone.now()


class MockClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, now: datetime | None = None) -> None:
        if now is not None and timezone.is_naive(now):
            raise ValueError("MockClock needs an aware datetime")
        self._now = (now or timezone.now()).astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._now += delta
            return self._now

    def set(self, dt: datetime) -> None:
        if timezone.is_naive(dt):
            raise ValueError("MockClock needs an aware datetime")
        with self._lock:
            self._now = dt.astimezone(UTC)


SYSTEM_CLOCK = SystemClock()
