"""One run of a `Worker`: a poller that claims batches sized by free capacity, slot threads
that start and run the held jobs `batch_concurrency` at a time, and a heartbeat that keeps
the lease of every held or running job.

Who owns what: a claimed job is in `held` until a slot takes it, then in `running` until
its outcome is written. One throttle permit and one token of each rate limiter go with it
from the claim until it is finished; a job that is not run gives its tokens back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from django.db import connection

from queues.api import (
    STARTED,
    DequeueOptions,
    InvalidJob,
    Job,
    JobOutcome,
    JobStatus,
)

from .executor import EventLoop, execute
from .faults import GaveUp, close_connection, retrying

logger = logging.getLogger("workers")
#: The shortest heartbeat interval, whatever the lease.
MIN_HEARTBEAT = 0.1


class WorkerRun:
    def __init__(self, worker, stop: threading.Event, force: threading.Event) -> None:
        self.worker = worker
        self.queue = worker.queue
        self.using = worker.queue.using
        self.stop = stop
        self.force = force
        self.cond = threading.Condition()
        self.held: deque[Job] = deque()
        self.running: dict = {}
        self.stopping = False  # guarded by cond
        self.finished = threading.Event()
        self.loop = EventLoop()
        self.stats = worker.stats
        options = DequeueOptions(lease_duration=worker.lease_duration)
        self.options = options.with_priority_weights(worker.priority_weights)

    # The run ----------------------------------------------------------------------------
    def run(self) -> None:
        name = self.worker.queue_name
        threads = [
            threading.Thread(target=self._watch, name=f"{name}-watch", daemon=True),
            threading.Thread(target=self._heartbeat, name=f"{name}-heartbeat", daemon=True),
        ]
        threads += [
            threading.Thread(target=self._slot, name=f"{name}-slot-{i}", daemon=True)
            for i in range(self.worker.batch_concurrency)
        ]
        for thread in threads:
            thread.start()
        try:
            self._poll()
        finally:
            try:
                self._shut_down()
            finally:
                self.finished.set()
                self.loop.close()
                close_connection(self.using)

    def _watch(self) -> None:
        """Turn the caller's stop (or force) into a wake-up of whoever waits on `cond`."""
        while not (self.stop.wait(0.05) or self.force.is_set()):
            if self.finished.is_set():
                return
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def _in_flight(self) -> int:
        return len(self.held) + len(self.running)

    def _capacity(self) -> int:
        # A new batch is claimed once every held job has started, sized to fill the batch
        # again: batches stay large and the slots never wait for a claim.
        if self.held:
            return 0
        return self.worker.batch_size - len(self.running)

    def _poll(self) -> None:
        poll = self.worker.poll_interval.total_seconds()
        while True:
            with self.cond:
                while not self.stopping and self._capacity() <= 0:
                    self.cond.wait()
                if self.stopping:
                    return
                wanted = self._capacity()
            asked, got = self._claim(wanted)
            if got and got == asked:
                continue  # maybe more where these came from
            with self.cond:
                if self.worker.burst and asked and not got and not self._in_flight():
                    logger.info("queue %s is empty", self.worker.queue_name)
                    return
                self.cond.wait(poll)

    def _claim(self, wanted: int) -> tuple[int, int]:
        """Claim up to `wanted` jobs within the free permits and tokens: (asked, got)."""
        throttle = self.worker.throttle
        permits = throttle.try_acquire(wanted) if throttle else wanted
        n = permits
        taken = []
        for limiter in self.worker.limiters:
            got = limiter.try_take(n)
            taken.append((limiter, got))
            n = min(n, got)
        # Keep only as many permits and tokens as the scarcest of them allows.
        for limiter, got in taken:
            limiter.refund(got - n)
        if throttle:
            throttle.release(permits - n)
        jobs: list[Job] = []
        if n:
            options = self.options.with_batch_size(n)
            try:
                jobs = retrying(
                    lambda: self.queue.dequeue(self.worker.queue_name, options),
                    what="claiming jobs",
                    using=self.using,
                    give_up=self.stop,
                )
            except GaveUp:
                jobs = []
        self._give_back(n - len(jobs))
        if jobs:
            logger.debug("claimed %d jobs from %s", len(jobs), self.worker.queue_name)
            with self.cond:
                self.held.extend(jobs)
                self.stats.add(held=len(jobs))
                self.cond.notify_all()
        return n, len(jobs)

    def _give_back(self, n: int) -> None:
        """Return the permits and tokens of `n` jobs that were not run."""
        if n <= 0:
            return
        if self.worker.throttle:
            self.worker.throttle.release(n)
        for limiter in self.worker.limiters:
            limiter.refund(n)

    # Slots ------------------------------------------------------------------------------
    def _slot(self) -> None:
        try:
            while True:
                with self.cond:
                    while not self.stopping and not self.held:
                        self.cond.wait()
                    if self.stopping:
                        return
                    job = self.held.popleft()
                    self.running[job.id] = job
                    self.stats.add(held=-1, running=1)
                try:
                    self._process(job)
                finally:
                    with self.cond:
                        del self.running[job.id]
                        self.stats.add(running=-1)
                        self.cond.notify_all()
        finally:
            connection.close()

    def _process(self, job: Job) -> None:
        try:
            started = retrying(
                lambda: self.queue.start_claimed_run(job),
                what=f"starting job {job.id}",
                using=self.using,
                give_up=self.force,
            )
        except GaveUp:
            self._give_back(1)  # still Running: the reaper takes it back after its lease
            return
        if started != STARTED:
            logger.info("held job %s not run: %s", job.id, started)
            self.stats.add(not_run=1)
            self._give_back(1)
            return
        timeout = job.timeout or self.worker.default_timeout
        outcome = execute(self.worker.handler, job, timeout, self.loop)
        self._finish(job, outcome)
        if self.worker.throttle:
            self.worker.throttle.release(1)

    def _finish(self, job: Job, outcome: JobOutcome) -> None:
        def write():
            try:
                return self.queue.finish_job_run(job, outcome)
            except InvalidJob as exc:  # e.g. a result that is not JSON
                return self.queue.finish_job_run(job, JobOutcome.failed(str(exc)))

        try:
            recorded = retrying(
                write, what=f"finishing job {job.id}", using=self.using, give_up=self.force
            )
        except GaveUp:
            logger.warning("job %s ran but its outcome was not written", job.id)
            return
        self.stats.add(processed=1)
        if recorded is None:
            logger.info("job %s finished after its run was taken back; outcome dropped", job.id)
        elif recorded.status == JobStatus.COMPLETED or outcome.kind == "completed":
            self.stats.add(completed=1)
        else:
            self.stats.add(failed=1)

    # Heartbeat --------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        lease = self.worker.lease_duration
        interval = max(lease.total_seconds() / 3, MIN_HEARTBEAT)
        try:
            while not self.finished.wait(interval):
                with self.cond:
                    jobs = [*self.held, *self.running.values()]
                if not jobs:
                    continue
                try:
                    retrying(
                        lambda jobs=jobs: self.queue.heartbeat_jobs(jobs, lease),
                        what="extending leases",
                        using=self.using,
                        give_up=self.finished,
                    )
                except GaveUp:
                    return
        finally:
            connection.close()

    # Shutdown ---------------------------------------------------------------------------
    def _shut_down(self) -> None:
        with self.cond:
            self.stopping = True
            unstarted = list(self.held)
            self.held.clear()
            self.stats.add(held=-len(unstarted))
            self.cond.notify_all()
        for job in unstarted:
            try:
                retrying(
                    lambda job=job: self.queue.release_job_run(job),
                    what=f"releasing job {job.id}",
                    using=self.using,
                    give_up=self.force,
                )
            except GaveUp:
                pass  # the reaper takes it back after its lease
            self._give_back(1)
        if unstarted:
            logger.info("released %d unstarted jobs of %s", len(unstarted), self.worker.queue_name)
        deadline = time.monotonic() + self.worker.shutdown_grace_period.total_seconds()
        with self.cond:
            while self.running and not self.force.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(min(left, 0.1))
            if self.running:
                logger.warning(
                    "%d jobs of %s still running at exit; their leases will expire",
                    len(self.running),
                    self.worker.queue_name,
                )
