"""`Worker`: the settings of a worker for one queue, built with `with_*` calls or keyword
arguments (their defaults are in defaults.py), and `run(stop)`, which runs the queue's jobs
until stopped. What a run does, thread by thread: runtime/run.py and
docs/design/worker.md."""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from uuid import UUID

from queues.api import JobQueue, PriorityWeights
from queues.options import MAX_BATCH_SIZE
from queues.validation import check_duration, validate_queue_name
from workers import defaults
from workers.runtime.rate_limit import RateLimit, RateLimiter
from workers.runtime.throttle import Throttle, ThrottleConfig


@dataclass
class WorkerStats:
    """What a worker holds and has done; read by `runworker` for its heartbeat row."""

    held: int = 0
    running: int = 0
    processed: int = 0
    completed: int = 0
    failed: int = 0
    not_run: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


def _duration(value, name: str, allow_zero: bool = False) -> timedelta:
    if (
        not isinstance(value, timedelta)
        or value < timedelta(0)
        or (value == timedelta(0) and not allow_zero)
    ):
        raise ValueError(f"{name} must be a positive timedelta, not {value!r}")
    return value


def _count(value, name: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValueError(f"{name} must be a whole number from 1 to {high}, not {value!r}")
    return value


class Worker:
    """Runs the jobs of `queue_name` with `handler(job)` (plain or async): the return value
    is stored as the result, an exception is a failed run."""

    def __init__(
        self,
        queue: JobQueue,
        queue_name: str,
        handler,
        *,
        poll_interval: timedelta = defaults.POLL_INTERVAL,
        batch_size: int = defaults.BATCH_SIZE,
        batch_concurrency: int = defaults.CONCURRENCY,
        lease_duration: timedelta = defaults.LEASE,
        shutdown_grace_period: timedelta = defaults.GRACE_PERIOD,
        rate_limit: RateLimit | None = None,
        throttle_config: ThrottleConfig | None = None,
        default_timeout: timedelta | None = None,
        priority_weights: PriorityWeights | None = None,
        burst: bool = False,
        claimed_by: UUID | None = None,
        cancel_check_interval: timedelta | None = defaults.CANCEL_CHECK_INTERVAL,
    ) -> None:
        if not callable(handler):
            raise TypeError("handler must be callable")
        self.queue = queue
        self.queue_name = validate_queue_name(queue_name)
        self.handler = handler
        self.rate_limiter: RateLimiter | None = None
        self.throttle: Throttle | None = None
        self.throttle_limiter: RateLimiter | None = None
        self.stats = WorkerStats()
        self.current_run = None  # the last run started (a health probe looks at its threads)
        self.with_poll_interval(poll_interval)
        self.with_batch_size(batch_size)
        self.with_batch_concurrency(batch_concurrency)
        self.with_lease_duration(lease_duration)
        self.with_shutdown_grace_period(shutdown_grace_period)
        self.with_default_timeout(default_timeout)
        self.with_priority_weights(priority_weights)
        self.with_burst(burst)
        self.with_claimed_by(claimed_by)
        self.with_cancel_check_interval(cancel_check_interval)
        if rate_limit is not None:
            self.with_rate_limit(rate_limit)
        if throttle_config is not None:
            self.with_throttle_config(throttle_config)

    def __repr__(self) -> str:
        return (
            f"Worker({self.queue_name!r}, batch_size={self.batch_size}, "
            f"batch_concurrency={self.batch_concurrency})"
        )

    # Settings (each returns the worker, for chaining) -----------------------------------
    def with_poll_interval(self, interval: timedelta) -> Worker:
        self.poll_interval = _duration(interval, "poll_interval")
        return self

    def with_batch_size(self, n: int) -> Worker:
        self.batch_size = _count(n, "batch_size", MAX_BATCH_SIZE)
        return self

    def with_batch_concurrency(self, n: int) -> Worker:
        self.batch_concurrency = _count(n, "batch_concurrency", 1000)
        return self

    def with_lease_duration(self, lease: timedelta) -> Worker:
        self.lease_duration = _duration(lease, "lease_duration")
        return self

    def with_shutdown_grace_period(self, period: timedelta) -> Worker:
        self.shutdown_grace_period = _duration(period, "shutdown_grace_period", allow_zero=True)
        return self

    def with_default_timeout(self, timeout: timedelta | None) -> Worker:
        """The timeout of jobs that have none of their own (None: no timeout)."""
        # At most a job's own longest timeout: a wait longer than the clock can count fails.
        self.default_timeout = (
            None if timeout is None else check_duration(timeout, "default_timeout")
        )
        return self

    def with_priority_weights(self, weights: PriorityWeights | None) -> Worker:
        self.priority_weights = weights
        return self

    def with_burst(self, burst: bool = True) -> Worker:
        """Return from `run` once the queue has nothing claimable and nothing is in flight."""
        self.burst = bool(burst)
        return self

    def with_claimed_by(self, process_id: UUID | None) -> Worker:
        """Stamp this worker's claims with `process_id` (runworker: its `WorkerProcess`
        id), so that the jobs of a process that died can be handed back at once."""
        if process_id is not None and not isinstance(process_id, UUID):
            raise TypeError("claimed_by must be a UUID or None")
        self.claimed_by = process_id
        return self

    def with_cancel_check_interval(self, interval: timedelta | None) -> Worker:
        """How often, while handlers run, one read asks whether their runs are still this
        worker's (an operator's cancel reaches a handler within about this long); None: only
        at the heartbeats (a third of the lease)."""
        self.cancel_check_interval = (
            None if interval is None else _duration(interval, "cancel_check_interval")
        )
        return self

    def with_rate_limit(self, limit: RateLimit) -> Worker:
        if not isinstance(limit, RateLimit):
            raise TypeError("expected a RateLimit")
        self.rate_limiter = RateLimiter(limit)
        return self

    def with_throttle_config(self, config: ThrottleConfig) -> Worker:
        if not isinstance(config, ThrottleConfig):
            raise TypeError("expected a ThrottleConfig")
        enabled = config.enabled and config.max_concurrent is not None
        self.throttle = Throttle(config.max_concurrent) if enabled else None
        limit = config.rate_limit
        self.throttle_limiter = RateLimiter(limit) if limit else None
        return self

    def clone(self) -> Worker:
        """A worker with the same settings that shares the rate limiter and the throttle."""
        twin = copy.copy(self)
        twin.stats = WorkerStats()
        twin.current_run = None
        return twin

    @property
    def limiters(self) -> list[RateLimiter]:
        return [lim for lim in (self.rate_limiter, self.throttle_limiter) if lim is not None]

    def settings(self) -> dict:
        """The settings as JSON, for the `WorkerProcess` row."""
        return {
            "queue": self.queue_name,
            "batch_size": self.batch_size,
            "batch_concurrency": self.batch_concurrency,
            "poll_interval": self.poll_interval.total_seconds(),
            "lease_duration": self.lease_duration.total_seconds(),
            "shutdown_grace_period": self.shutdown_grace_period.total_seconds(),
            "burst": self.burst,
            "cancel_check_interval": self.cancel_check_interval.total_seconds()
            if self.cancel_check_interval
            else None,
        }

    # Running ------------------------------------------------------------------------------
    def run(
        self,
        stop: threading.Event | None = None,
        force: threading.Event | None = None,
        *,
        hub=None,
    ):
        """Work until `stop` is set (or, in burst mode, until the queue is empty).

        On stop, unstarted jobs are released at once and running ones get the grace period;
        setting `force` as well ends the wait for them. Works in any thread; installs no
        signal handlers. `hub`: the writer, heartbeat and watcher of a process's runs, to
        share with them (`workers.runtime.hub.ProcessHub`); by default the run has its own.
        """
        from workers.runtime import WorkerRun

        self.current_run = WorkerRun(
            self, stop or threading.Event(), force or threading.Event(), hub
        )
        self.current_run.run()
