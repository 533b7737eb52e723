"""The slots of a worker run: `batch_concurrency` threads, each taking a held job, running
its handler and handing the outcome to the writer together with the next held job to start:
one transaction records the end of one job and the start of the next, so a busy slot costs
no start marker of its own."""

from __future__ import annotations

import logging
import time

from django.db import connection

from queues.api import STARTED, InvalidJob, Job, JobOutcome
from queues.rules import check_outcome

from ..executor import EventLoop, execute
from .allowance import Allowance
from .state import Request, RunState

logger = logging.getLogger("workers")


class Slot:
    def __init__(self, worker, state: RunState, allowance: Allowance, loop: EventLoop) -> None:
        self.worker = worker
        self.state = state
        self.allowance = allowance
        self.loop = loop

    def run(self) -> None:
        state = self.state
        try:
            job = None
            while True:
                if job is None:
                    held = state.take(wait=True)
                    if held is None:
                        return
                    job = held.job
                    if not held.fresh():
                        job = self._started(state.submit(start=job))
                        continue
                outcome = None
                try:
                    outcome = self._process(job)
                except Exception:  # a bug must not cost the worker a slot
                    logger.exception("job %s: the worker failed to process it", job.id)
                    self.allowance.refund(1)  # still Running: the reaper takes it back
                if outcome is None:
                    self._done(job)
                    job = None
                    continue
                # Wait for the write before running the next job: a fail-fast batch must
                # have failed, and a sequential batch's previous job must have completed,
                # before this slot starts another. Slots waiting together share a write.
                job = self._started(state.submit(finished=(job, outcome), take_next=True))
        finally:
            connection.close()

    def _started(self, request: Request) -> Job | None:
        """The job `request` started, or None (and its permit and tokens back) if it did not
        start: its claim was lost, its queue paused, its fail-fast batch failed."""
        job = request.start
        if job is None or request.answer == STARTED:
            return job
        logger.info("held job %s not run: %s", job.id, request.answer or "database gone")
        self.state.stats.add(not_run=1)
        self.allowance.refund(1)  # on a lost database it stays Running: the reaper takes it
        self._done(job)
        return None

    def _done(self, job: Job) -> None:
        self.allowance.release(1)
        self.state.done([job])

    def _process(self, job: Job) -> JobOutcome:
        """Run `job` (started already); its outcome."""
        timeout = job.timeout or self.worker.default_timeout
        began = time.monotonic()
        outcome = execute(self.worker.handler, job, timeout, self.loop)
        self.state.note_run_time(time.monotonic() - began)
        try:
            check_outcome(outcome)
        except (InvalidJob, TypeError) as exc:  # e.g. a result that is not JSON
            outcome = JobOutcome.failed(str(exc))
        return outcome
