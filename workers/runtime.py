"""One run of a `Worker`: a poller that claims batches sized by free capacity, slot threads
that start and run the held jobs `batch_concurrency` at a time, and a heartbeat that keeps
the lease of every held or running job.

Who owns what: a claimed job is in `held` until a slot takes it, then in `running` until
its outcome is written; both are guarded by `cond`. One throttle permit and one token of
each rate limiter go with a job from its claim; the permit comes back when the job is done
with, the tokens only if it was not run.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import uuid
from collections import deque

from django.db import connection

from queues.api import STARTED, DequeueOptions, InvalidJob, Job, JobOutcome, JobStatus

from .executor import EventLoop, execute
from .faults import GaveUp, close_connection, retrying
from .heartbeat import beat_until

logger = logging.getLogger("workers")


class WorkerRun:
    def __init__(self, worker, stop: threading.Event, force: threading.Event) -> None:
        self.worker = worker
        self.queue = worker.queue
        # A TestQueue (in memory) has no database alias and no connection to lose.
        self.using = getattr(self.queue, "using", "default")
        self.tokens = "run_token" in inspect.signature(self.queue.dequeue).parameters
        self.stop = stop
        self.force = force
        self.cond = threading.Condition()
        self.held: deque[Job] = deque()
        self.running: dict = {}
        self.stopping = False
        self.finished = threading.Event()
        self.loop = EventLoop()
        self.stats = worker.stats
        options = DequeueOptions(lease_duration=worker.lease_duration)
        self.options = options.with_priority_weights(worker.priority_weights)

    def _db(self, fn, what: str, give_up: threading.Event):
        return retrying(fn, what=what, using=self.using, give_up=give_up)

    # The run ----------------------------------------------------------------------------
    def run(self) -> None:
        name = self.worker.queue_name
        heartbeat = (self.finished, self.queue, self.worker.lease_duration, self._in_flight)
        threads = [
            threading.Thread(target=self._watch, name=f"{name}-watch"),
            threading.Thread(target=beat_until, args=heartbeat, name=f"{name}-heartbeat"),
        ]
        threads += [
            threading.Thread(target=self._slot, name=f"{name}-slot-{i}")
            for i in range(self.worker.batch_concurrency)
        ]
        for thread in threads:
            # Daemons: a job still running when the grace period ends must not keep the
            # process alive; its lease expires and the reaper takes it back.
            thread.daemon = True
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

    def _in_flight(self) -> list[Job]:
        with self.cond:
            return [*self.held, *self.running.values()]

    def _capacity(self) -> int:
        # A new batch is claimed once every held job has started, sized to fill the batch
        # again: batches stay large and the slots do not wait for a claim.
        if self.held:
            return 0
        return self.worker.batch_size - len(self.running)

    # Claims -----------------------------------------------------------------------------
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
                if self.worker.burst and asked and not got and not self._in_flight_count():
                    logger.info("queue %s is empty", self.worker.queue_name)
                    return
                if not self.stopping:
                    self.cond.wait(poll)

    def _in_flight_count(self) -> int:
        return len(self.held) + len(self.running)

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
            try:
                jobs = self._db(self._claimer(n), "claiming jobs", give_up=self.stop)
            except GaveUp:
                jobs = []
        self._not_run(n - len(jobs))
        if jobs:
            logger.debug("claimed %d jobs from %s", len(jobs), self.worker.queue_name)
            with self.cond:
                self.held.extend(jobs)
                self.stats.add(held=len(jobs))
                self.cond.notify_all()
        return n, len(jobs)

    def _claimer(self, n: int):
        """A claim of `n` jobs that can be retried after a fault: the claim has its own run
        token, so if the fault hid a claim that was committed, the retry finds its jobs
        instead of leaving them Running until their lease expires."""
        options = self.options.with_batch_size(n)
        token = uuid.uuid4()
        tries = 0

        def claim() -> list[Job]:
            nonlocal tries
            tries += 1
            if tries > 1 and self.tokens:
                jobs = Job.objects.using(self.using).filter(
                    queue_name=self.worker.queue_name, status=JobStatus.RUNNING, run_token=token
                )
                found = list(jobs.order_by("-priority", "scheduled_at", "id"))
                if found:
                    logger.warning("found %d jobs of a claim whose reply was lost", len(found))
                    return found
            if self.tokens:
                return self.queue.dequeue(self.worker.queue_name, options, run_token=token)
            return self.queue.dequeue(self.worker.queue_name, options)

        return claim

    def _not_run(self, n: int) -> None:
        """Return the permits and tokens of `n` claimed (or asked for) jobs not run."""
        self._release_permits(n)
        self._refund(n)

    def _release_permits(self, n: int) -> None:
        if n > 0 and self.worker.throttle:
            self.worker.throttle.release(n)

    def _refund(self, n: int) -> None:
        if n > 0:
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
                except Exception:  # a bug must not cost the worker a slot
                    logger.exception("job %s: the worker failed to process it", job.id)
                    self._refund(1)  # still Running: the reaper takes it back
                finally:
                    self._release_permits(1)
                    with self.cond:
                        del self.running[job.id]
                        self.stats.add(running=-1)
                        self.cond.notify_all()
        finally:
            connection.close()

    def _process(self, job: Job) -> None:
        try:
            started = self._db(
                lambda: self.queue.start_claimed_run(job), f"starting job {job.id}", self.force
            )
        except GaveUp:
            self._refund(1)  # still Running: the reaper takes it back after its lease
            return
        if started != STARTED:
            logger.info("held job %s not run: %s", job.id, started)
            self.stats.add(not_run=1)
            self._refund(1)
            return
        timeout = job.timeout or self.worker.default_timeout
        self._finish(job, execute(self.worker.handler, job, timeout, self.loop))

    def _finish(self, job: Job, outcome: JobOutcome) -> None:
        def write():
            try:
                return self.queue.finish_job_run(job, outcome)
            except InvalidJob as exc:  # e.g. a result that is not JSON
                return self.queue.finish_job_run(job, JobOutcome.failed(str(exc)))

        try:
            recorded = self._db(write, f"finishing job {job.id}", self.force)
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
                self._db(
                    lambda job=job: self.queue.release_job_run(job),
                    f"releasing job {job.id}",
                    self.force,
                )
            except GaveUp:
                pass  # still Running: the reaper takes it back after its lease
            self._not_run(1)
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
