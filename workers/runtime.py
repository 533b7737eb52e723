"""One run of a `Worker`: a poller that claims batches sized by free capacity; slot threads
that run the held jobs `batch_concurrency` at a time; a writer that records what the slots
hand in (the outcome of the job they ran and the start of the next held job they take)
with one transaction for all requests waiting (`finish_and_start_runs`); and a heartbeat that
keeps the lease of every held or running job.

Who owns what: a claimed job is in `held` until a slot takes it, then in `running` until
its outcome is written; both are guarded by `lock`. One throttle permit and one token of
each rate limiter go with a job from its claim; the permit comes back when the job is done
with, the tokens only if it was not run.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

from django.db import connection

from queues.api import STARTED, DequeueOptions, InvalidJob, Job, JobOutcome, JobStatus
from queues.outcomes import check_outcome

from .executor import EventLoop, execute
from .faults import GaveUp, close_connection, retrying
from .heartbeat import beat_until

logger = logging.getLogger("workers")

#: A job a slot takes within this many seconds of its claim starts "at the claim": the claim
#: already recorded the start and checked the pause, so no start marker is written for it.
FRESH_START = 0.05
#: Group commit: while jobs are short (their runs average under this many seconds), the
#: writer waits up to this long for the slots still running one, so that one transaction
#: records them all instead of each write catching half of them. Long jobs are written at
#: once: their slots would only wait.
LINGER = 0.001


@dataclass
class Request:
    """A slot's request to the writer: an outcome to record, a held job to start, or both."""

    finished: tuple[Job, JobOutcome] | None
    start: Job | None
    written: threading.Event = field(default_factory=threading.Event)
    answer: str | None = None  # what the start did (None: the database was gone)


class WorkerRun:
    def __init__(self, worker, stop: threading.Event, force: threading.Event) -> None:
        self.worker = worker
        self.queue = worker.queue
        # A TestQueue (in memory) has no database alias and no connection to lose.
        self.using = getattr(self.queue, "using", "default")
        self.stop = stop
        self.force = force
        # One lock guards `held`, `running`, `outbox` and `stopping`; each kind of waiter has
        # its own condition, so a notification wakes only the threads it concerns (a job
        # finishing must not wake ten idle slots).
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)  # slots: a held job to take
        self.room = threading.Condition(self.lock)  # poller, shutdown: capacity, running
        self.requests = threading.Condition(self.lock)  # writer: the outbox
        self.stopped = threading.Event()
        self.held: deque[Job] = deque()
        self.running: dict = {}
        # Of `running`, the jobs whose outcome waits for the writer: done with their slot.
        self.finishing = 0
        self.idle = 0  # slots waiting for a held job
        self.run_time: float | None = None  # moving average of the handlers' run times
        # Requests waiting for the writer; their jobs stay in `running` until written.
        self.outbox: list[Request] = []
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
            threading.Thread(target=self._write_outcomes, name=f"{name}-writer"),
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
        """Turn the caller's stop (or force) into a wake-up of every waiter."""
        while not (self.stop.wait(0.05) or self.force.is_set()):
            if self.finished.is_set():
                return
        self._set_stopping()

    def _set_stopping(self) -> None:
        with self.lock:
            self.stopping = True
            self.stopped.set()
            for condition in (self.work, self.room, self.requests):
                condition.notify_all()

    def _in_flight(self) -> list[Job]:
        with self.lock:
            return [*self.held, *self.running.values()]

    def _capacity(self) -> int:
        # A new batch is claimed once every held job has started, sized to fill the batch
        # again: batches stay large and the slots do not wait for a claim.
        if self.held:
            return 0
        # Jobs only waiting for their outcome's write leave within a write: counting them
        # would make the claims that come while they wait too small to refill the batch.
        return self.worker.batch_size - len(self.running) + self.finishing

    # Claims -----------------------------------------------------------------------------
    def _poll(self) -> None:
        poll = self.worker.poll_interval.total_seconds()
        while True:
            with self.lock:
                while not self.stopping and self._capacity() <= 0:
                    self.room.wait()
                if self.stopping:
                    return
                wanted = self._capacity()
            asked, got = self._claim(wanted)
            if got and got == asked:
                continue  # maybe more where these came from
            with self.lock:
                if self.worker.burst and asked and not got and not self._in_flight_count():
                    logger.info("queue %s is empty", self.worker.queue_name)
                    return
            # The queue had less than asked for: claim again after the poll interval (not
            # at each job's end, which would poll an empty queue once per job).
            self.stopped.wait(poll)

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
            claimed_at = time.monotonic()
            for job in jobs:
                job.claimed_at_monotonic = claimed_at
            logger.debug("claimed %d jobs from %s", len(jobs), self.worker.queue_name)
            with self.lock:
                self.held.extend(jobs)
                self.stats.add(held=len(jobs))
                self.work.notify(len(jobs))
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
            if tries > 1:
                jobs = Job.objects.using(self.using).filter(
                    queue_name=self.worker.queue_name, status=JobStatus.RUNNING, run_token=token
                )
                found = list(jobs.order_by("-priority", "scheduled_at", "id"))
                if found:
                    logger.warning("found %d jobs of a claim whose reply was lost", len(found))
                    return found
            return self.queue.dequeue(self.worker.queue_name, options, run_token=token)

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
        """Take a held job, run it, and hand its outcome to the writer together with the
        next held job to start: one transaction records the end of one job and the start of
        the next, so a busy slot costs no start marker of its own."""
        try:
            job = None
            while True:
                if job is None:
                    job = self._take(wait=True)
                    if job is None:
                        return
                    if not self._fresh(job):
                        job = self._started(self._request(start=job))
                        continue
                outcome = None
                try:
                    outcome = self._process(job)
                except Exception:  # a bug must not cost the worker a slot
                    logger.exception("job %s: the worker failed to process it", job.id)
                    self._refund(1)  # still Running: the reaper takes it back
                if outcome is None:
                    self._done([job])
                    job = None
                    continue
                # Wait for the write before running the next job: a fail-fast batch must
                # have failed, and a sequential batch's previous job must have completed,
                # before this slot starts another. Slots waiting together share a write.
                job = self._started(self._request(finished=(job, outcome), take_next=True))
        finally:
            connection.close()

    def _take(self, wait: bool) -> Job | None:
        """The next held job, now running (None when stopping, or if none and not `wait`)."""
        with self.lock:
            self.idle += 1
            while wait and not self.stopping and not self.held:
                self.work.wait()
            self.idle -= 1
            return self._take_locked()

    def _take_locked(self) -> Job | None:
        if self.stopping or not self.held:
            return None
        job = self.held.popleft()
        self.running[job.id] = job
        self.stats.add(held=-1, running=1)
        if not self.held:
            # The poller claims again once every held job has started: wake it, or it waits
            # for a job to finish (forever, if none does).
            self.room.notify_all()
        return job

    @staticmethod
    def _fresh(job: Job) -> bool:
        """Taken so soon after its claim that the claim's start time and pause check stand."""
        age = time.monotonic() - getattr(job, "claimed_at_monotonic", 0)
        return age < FRESH_START and job.batch_id is None

    def _request(
        self,
        finished: tuple[Job, JobOutcome] | None = None,
        start: Job | None = None,
        take_next: bool = False,
    ) -> Request:
        """Hand the writer an outcome to record and/or a held job to start (with
        `take_next`, the next held job, if any); wait for the write."""
        with self.lock:
            # Under one lock with the take: the poller, woken when the take empties `held`,
            # must already count the finished job as finishing, or it claims too few.
            if finished is not None:
                self.finishing += 1
            if take_next:
                start = self._take_locked()
            request = Request(finished, start)
            self.outbox.append(request)
            self.requests.notify()
        request.written.wait()
        return request

    def _started(self, request: Request) -> Job | None:
        """The job `request` started, or None (and its permit and tokens back) if it did not
        start: its claim was lost, its queue paused, its fail-fast batch failed."""
        job = request.start
        if job is None or request.answer == STARTED:
            return job
        logger.info("held job %s not run: %s", job.id, request.answer or "database gone")
        self.stats.add(not_run=1)
        self._refund(1)  # on a lost database it stays Running: the reaper takes it back
        self._done([job])
        return None

    def _done(self, jobs: list[Job], written: bool = False) -> None:
        """The jobs are off this worker's hands: their permits go back. `written`: they were
        finishing (their outcome went to the writer)."""
        self._release_permits(len(jobs))
        with self.lock:
            for job in jobs:
                del self.running[job.id]
            if written:
                self.finishing -= len(jobs)
            self.stats.add(running=-len(jobs))
            self.room.notify_all()

    def _process(self, job: Job) -> JobOutcome:
        """Run `job` (started already); its outcome."""
        timeout = job.timeout or self.worker.default_timeout
        began = time.monotonic()
        outcome = execute(self.worker.handler, job, timeout, self.loop)
        took = time.monotonic() - began
        # Unlocked: a lost update among racing slots only nudges a heuristic.
        last = self.run_time
        self.run_time = took if last is None else 0.8 * last + 0.2 * took
        try:
            check_outcome(outcome)
        except (InvalidJob, TypeError) as exc:  # e.g. a result that is not JSON
            outcome = JobOutcome.failed(str(exc))
        return outcome

    # Outcomes ---------------------------------------------------------------------------
    def _write_outcomes(self) -> None:
        """Write waiting requests, all of them in one transaction: while one write is in
        flight the next requests gather, so a busy worker writes many per transaction and
        an idle one writes each at once."""
        try:
            while True:
                with self.lock:
                    while not self.outbox and not self.finished.is_set():
                        self.requests.wait(0.1)
                    if not self.outbox:
                        return
                    self._linger()
                    batch, self.outbox = self.outbox, []
                self._write(batch)
        finally:
            connection.close()

    def _linger(self) -> None:
        """Wait (lock held) for the slots still running short jobs to hand them in too."""
        if self.run_time is None or self.run_time >= LINGER:
            return
        deadline = time.monotonic() + LINGER
        busy = self.worker.batch_concurrency - self.idle
        while not self.stopping and len(self.outbox) < busy:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.requests.wait(left)
            busy = self.worker.batch_concurrency - self.idle

    def _write(self, requests: list[Request]) -> None:
        finished = [r.finished for r in requests if r.finished is not None]
        starting = [r.start for r in requests if r.start is not None]
        what = f"finishing {len(finished)} and starting {len(starting)} jobs"
        try:
            recorded, answers = self._db(
                lambda: self.queue.finish_and_start_runs(finished, starting), what, self.force
            )
        except Exception as exc:
            # GaveUp (the database stayed away until a forced stop) or a bug: either way the
            # slots waiting on this write must go on. The jobs stay Running; their leases
            # expire and the reaper takes them back.
            if not isinstance(exc, GaveUp):
                logger.exception("writing %s failed", what)
            if finished:
                logger.warning("%d jobs ran but their outcomes were not written", len(finished))
            recorded, answers, written = [None] * len(finished), [None] * len(starting), False
        else:
            written = True
        for (job, outcome), result in zip(finished, recorded, strict=True):
            if not written:
                continue
            self.stats.add(processed=1)
            if result is None:
                logger.info("job %s finished after its run was taken back; outcome dropped", job.id)
            elif result.status == JobStatus.COMPLETED or outcome.kind == "completed":
                self.stats.add(completed=1)
            else:
                self.stats.add(failed=1)
        if finished:
            self._done([job for job, _ in finished], written=True)
        answer = iter(answers)
        for request in requests:
            if request.start is not None:
                request.answer = next(answer)
            request.written.set()

    # Shutdown ---------------------------------------------------------------------------
    def _shut_down(self) -> None:
        self._set_stopping()
        with self.lock:
            unstarted = list(self.held)
            self.held.clear()
            self.stats.add(held=-len(unstarted))
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
        with self.lock:
            while self.running and not self.force.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.room.wait(min(left, 0.1))
            if self.running:
                logger.warning(
                    "%d jobs of %s still running at exit; their leases will expire",
                    len(self.running),
                    self.worker.queue_name,
                )
