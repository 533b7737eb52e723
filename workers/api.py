"""The public Python API of the worker runtime (see spec/API.md): `Worker` and its
limits, the handler registry, and the errors a handler may raise or meet. Import from here
only; the modules behind it may move."""

from __future__ import annotations

from workers.registry import NoHandler, autodiscover, dispatch, handler_for, job_handler
from workers.runtime.executor import JobError, RunawayHandler
from workers.runtime.rate_limit import RateLimit, RateLimiter
from workers.runtime.throttle import Throttle, ThrottleConfig
from workers.tasks import HammerwebTaskContext
from workers.worker import Worker, WorkerStats

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
