"""Backoff between attempts: fixed, linear, exponential (with jitter) and Fibonacci. A
strategy is stored on the job as JSON (``Job.retry_strategy``) so that every worker computes
the same delays; ``delay(attempt)`` takes the number of the attempt that just failed (1 for
the first run). See docs/design/vocabulary.md."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

MIN_DELAY = timedelta(milliseconds=1)


def _seconds(value: timedelta | float | int, name: str) -> float:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 0:
        raise ValueError(f"{name} must not be negative")
    return seconds


@dataclass(frozen=True)
class RetryStrategy:
    """Base: subclasses compute `_raw_seconds`; the result is capped and floored."""

    kind = ""

    def delay(self, attempt: int, rng: random.Random | None = None) -> timedelta:
        seconds = self._raw_seconds(max(1, attempt), rng or random)
        cap = getattr(self, "max_delay", None)
        if cap is not None:
            seconds = min(seconds, cap)
        return max(MIN_DELAY, timedelta(seconds=seconds))

    def _raw_seconds(self, attempt: int, rng: random.Random) -> float:  # pragma: no cover
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if v is not None}
        return {"type": self.kind, **data}

    @staticmethod
    def from_dict(data: dict[str, Any] | None) -> RetryStrategy:
        if not data:
            return DEFAULT_RETRY_STRATEGY
        if isinstance(data, RetryStrategy):
            return data
        fields = {k: v for k, v in data.items() if k != "type"}
        try:
            cls = _KINDS[data["type"]]
            return cls(**fields)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"unknown retry strategy: {data!r}") from exc

    @staticmethod
    def fixed(delay: timedelta) -> Fixed:
        return Fixed(_seconds(delay, "delay"))

    @staticmethod
    def linear(base: timedelta, increment: timedelta, max_delay: timedelta | None = None) -> Linear:
        return Linear(
            _seconds(base, "base"),
            _seconds(increment, "increment"),
            None if max_delay is None else _seconds(max_delay, "max_delay"),
        )

    @staticmethod
    def exponential(
        base: timedelta,
        multiplier: float = 2.0,
        max_delay: timedelta | None = None,
        jitter: float = 0.0,
    ) -> Exponential:
        if multiplier < 1:
            raise ValueError("multiplier must be at least 1")
        if not 0 <= jitter <= 1:
            raise ValueError("jitter is a fraction between 0 and 1")
        return Exponential(
            _seconds(base, "base"),
            float(multiplier),
            None if max_delay is None else _seconds(max_delay, "max_delay"),
            float(jitter),
        )

    @staticmethod
    def fibonacci(base: timedelta, max_delay: timedelta | None = None) -> Fibonacci:
        return Fibonacci(
            _seconds(base, "base"), None if max_delay is None else _seconds(max_delay, "max_delay")
        )


@dataclass(frozen=True)
class Fixed(RetryStrategy):
    delay_seconds: float
    kind = "fixed"

    def _raw_seconds(self, attempt: int, rng: random.Random) -> float:
        return self.delay_seconds


@dataclass(frozen=True)
class Linear(RetryStrategy):
    base: float
    increment: float
    max_delay: float | None = None
    kind = "linear"

    def _raw_seconds(self, attempt: int, rng: random.Random) -> float:
        return self.base + self.increment * (attempt - 1)


@dataclass(frozen=True)
class Exponential(RetryStrategy):
    base: float
    multiplier: float = 2.0
    max_delay: float | None = None
    jitter: float = 0.0
    kind = "exponential"

    def _raw_seconds(self, attempt: int, rng: random.Random) -> float:
        # Cap before the jitter so that a capped delay still spreads retries out.
        seconds = self.base * self.multiplier ** min(attempt - 1, 64)
        if self.max_delay is not None:
            seconds = min(seconds, self.max_delay)
        if self.jitter:
            seconds *= rng.uniform(1 - self.jitter, 1 + self.jitter)
        return seconds


@dataclass(frozen=True)
class Fibonacci(RetryStrategy):
    base: float
    max_delay: float | None = None
    kind = "fibonacci"

    def _raw_seconds(self, attempt: int, rng: random.Random) -> float:
        a, b = 1, 1  # fib(1), fib(2)
        for _ in range(min(attempt, 90) - 1):
            a, b = b, a + b
        return self.base * a


_KINDS: dict[str, type[RetryStrategy]] = {
    cls.kind: cls for cls in (Fixed, Linear, Exponential, Fibonacci)
}

#: Used when a job names no strategy: 10 s, 20 s, 40 s ... capped at an hour, +/-10 % jitter.
DEFAULT_RETRY_STRATEGY = Exponential(base=10.0, multiplier=2.0, max_delay=3600.0, jitter=0.1)
