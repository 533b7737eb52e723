"""The public Python API of the worker runtime (see spec/API.md). Import from here only."""

from __future__ import annotations

from .executor import JobError, RunawayHandler
from .rate_limit import RateLimit, RateLimiter
from .registry import NoHandler, autodiscover, dispatch, handler_for, job_handler
from .tasks import HammerwebTaskContext
from .throttle import Throttle, ThrottleConfig
from .worker import Worker, WorkerStats

__all__ = [
    "HammerwebTaskContext",
    "JobError",
    "NoHandler",
    "RateLimit",
    "RateLimiter",
    "RunawayHandler",
    "ThrottleConfig",
    "Throttle",
    "Worker",
    "WorkerStats",
    "autodiscover",
    "dispatch",
    "handler_for",
    "job_handler",
]
