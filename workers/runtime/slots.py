"""The slots of a worker run: `batch_concurrency` threads, each taking a held job, running
its handler and handing the outcome to the writer (most without waiting for its write).
A handler thread that outlives its timeout and the grace period ends the run
(`RunawayHandler`). See docs/design/worker.md."""

from __future__ import annotations

import logging
import threading
import time

from queues import tracing
from queues.api import STARTED, InvalidJob, Job, JobOutcome
from queues.engine.outcomes import check_outcome
from queues.enums import HandlerEnd
from workers import metrics
from workers.runtime import handoffs
from workers.runtime.allowance import Allowance
from workers.runtime.connections import close_all
from workers.runtime.executor import EventLoop, Execution, Interrupted, execute
from workers.runtime.handler_thread import HandlerThreads
from workers.runtime.handoffs import Request
from workers.runtime.state import RunState

logger = logging.getLogger("workers")


class Slot:
    def __init__(
        self,
        worker,
        state: RunState,
        allowance: Allowance,
        loop: EventLoop,
        on_runaway,
        checks: bool,
    ) -> None:
        self.worker = worker
        self.state = state
        self.allowance = allowance
        self.loop = loop
        self.on_runaway = on_runaway  # called with the job and its thread
        # Whether the writes check held jobs (a caller's queue may lack `write_runs`): if not,
        # every held job taken after an outcome gets its start marker.
        self.checks = checks
        self.key = id(self)  # of its share of held jobs (`RunState.shares`)
        self.threads = HandlerThreads()  # where its sync handlers with a timeout run

    def run(self) -> None:
        state = self.state
        try:
            job = None
            while True:
                if job is None and state.has_share(self.key) and not state.stopping:
                    job = self._from_share()
                    continue
                if job is None:
                    held = state.take(True, self.key, self.worker.batch_size)
                    if held is None:
                        return
                    job = held.job
                    if not held.fresh():
                        job = self._started(state.submit(start=job))
                        continue
                execution = None
                try:
                    execution = self._process(job)
                except Exception:  # a bug must not cost the worker a slot
                    logger.exception("job %s: the worker failed to process it", job.id)
                    self.allowance.refund(1)  # still Running: the reaper takes it back
                if execution is None:
                    self._done(job)
                    job = None
                    continue
                if job.cancel_requested():
                    if not self._taken_away(job, execution):
                        return
                    job = None
                    continue
                straggler = execution.straggler
                if straggler is None and self._goes_on(job, execution.outcome):
                    # Without waiting for its write. Where claims run a batch ahead (jobs
                    # that are not short), the slot takes its next held job with it: that
                    # job starts once the write's read (or its start marker) says its run is
                    # still this worker's (see `_next`). Short jobs are claimed for idle
                    # slots only: the slot goes back to them.
                    ahead = state.per_slot(self.worker.batch_size) == 1
                    request = state.submit(
                        finished=(job, execution.outcome),
                        wait=False,
                        check_next=ahead and self.checks and not state.has_share(self.key),
                    )
                    job = self._next(request)
                    continue
                # Wait for the write before running the next job: a fail-fast batch must
                # have failed, and a sequential batch's previous job must have completed,
                # before this slot starts another. Slots waiting together share a write.
                # A slot whose handler is still running takes no next job.
                request = self._hand_in(job, execution.outcome, take_next=straggler is None)
                job = self._started(request)
                if straggler is not None and not self._came_back(request.finished[0], straggler):
                    return
        finally:
            self.threads.close()
            close_all()

    def _next(self, request: Request) -> Job | None:
        """The held job taken with an outcome handed in, started (or None if none was held,
        or it did not start). Taken within the claim's start window, it was checked by the
        write (a read that began after this slot asked: its run still this worker's, its
        queue not paused, its fail-fast batch not failed), so that a run an operator took
        back since the claim does not start here; otherwise, or if the check said no or
        failed, the writer's start marker decides, as for any held job."""
        job = request.check
        if job is None:
            return self._started(request) if request.start is not None else None
        # Asked within the claim's start window, and answered within it (a write retried
        # through an outage may end much later): then the claim's start time stands.
        recent = time.monotonic() - request.asked_at < handoffs.FRESH_START
        if job.id in request.startable and recent:
            return job
        return self._started(self.state.submit(start=job))

    def _from_share(self) -> Job | None:
        """The next job of the slot's share: it starts on its claim's checks while within
        the claim's start window; else its start marker decides. At a stop, the share is
        released with the held jobs."""
        taken = self.state.take_shared(self.key)
        if taken is None:
            return None
        job, claimed_at = taken
        if time.monotonic() - claimed_at < handoffs.FRESH_START:
            return job
        return self._started(self.state.submit(start=job))

    @staticmethod
    def _goes_on(job: Job, outcome) -> bool:
        """Whether the slot may take its next job before this outcome is written: an outcome
        (not a run the database's outage cut short, which is given back) of a job whose
        effects reach no held job: in no workflow, and in no batch unless it completed (a
        completion fails no batch; a failure may fail a fail-fast batch, whose held jobs
        must then not start, so this slot waits for that write)."""
        if not isinstance(outcome, JobOutcome) or job.workflow_id:
            return False
        return job.batch_id is None or outcome.kind == "completed"

    def _hand_in(self, job: Job, outcome, take_next: bool) -> Request:
        if isinstance(outcome, Interrupted):
            if self.state.may_give_back(job):
                return self.state.submit(given_back=job, take_next=take_next)
            logger.warning("job %s: the database went away under it again; a failed run", job.id)
            outcome = JobOutcome.failed(outcome.error)
        return self.state.submit(finished=(job, outcome), take_next=take_next)

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

    def _process(self, job: Job) -> Execution:
        """Run `job` (started already), within its span if it is traced; how it went."""
        if not tracing.runs_traced():
            return self._execute(job)
        with tracing.run_span(job) as span:
            execution = self._execute(job)
            if span is not None:
                outcome = execution.outcome
                span.end(_outcome_name(job, outcome), execution.error, outcome.error)
        return execution

    def _execute(self, job: Job) -> Execution:
        timeout = job.timeout or self.worker.default_timeout
        began = time.monotonic()
        execution = execute(self.worker.handler, job, timeout, self.loop, self.threads)
        took = time.monotonic() - began
        self.state.note_run_time(took)
        metrics.ran(job.queue_name, took)
        outcome = execution.outcome
        if isinstance(outcome, Interrupted):
            return execution
        try:
            check_outcome(outcome)
        except (InvalidJob, TypeError) as exc:  # e.g. a result that is not JSON
            return Execution(JobOutcome.failed(str(exc)), execution.straggler)
        return execution

    def _taken_away(self, job: Job, execution: Execution) -> bool:
        """The run of `job` was taken from this worker while its handler ran (cancelled,
        retried, reaped): nothing of its outcome is written (the run is fenced out); the
        history row of its end says how the handler ended, and the slot is free as soon as
        the handler is back. False if its thread is still running after the grace period."""
        outcome = execution.outcome
        cut_off = execution.straggler is not None or (
            isinstance(outcome, JobOutcome) and outcome.kind == "timed_out"
        )
        end = HandlerEnd.CUT_OFF if cut_off else HandlerEnd.STOPPED
        try:
            self.worker.queue.record_handler_end(job, end)
        except Exception:  # a note after the fact: the run itself is already recorded
            logger.warning("job %s: noting how its handler ended failed", job.id, exc_info=True)
        logger.info(
            "job %s: its handler %s after its run was taken away; its outcome is discarded",
            job.id,
            "was cut off at its timeout" if cut_off else "stopped",
        )
        self.state.stats.add(processed=1, failed=1)  # its run ended without completing
        self._done(job)
        return execution.straggler is None or self._came_back(job, execution.straggler)

    def _came_back(self, job: Job, thread: threading.Thread) -> bool:
        """Wait up to the grace period for the thread of a handler that timed out."""
        thread.join(self.worker.shutdown_grace_period.total_seconds())
        if not thread.is_alive():
            return True
        self.on_runaway(job, thread)
        return False


def _outcome_name(job: Job, outcome) -> str:
    """How a run ended, for its span: completed, failed, retried, timed_out, cancelled, or
    interrupted (the database went away: the attempt is given back)."""
    if job.cancel_requested():
        return "cancelled"  # taken from this worker while it ran: its outcome is discarded
    if isinstance(outcome, Interrupted):
        return "interrupted"
    kind = outcome.kind
    if kind == "retry" or (kind in ("failed", "timed_out") and job.attempts < job.max_attempts):
        return "retried"  # as the outcome's write will have it (queues.engine.outcomes)
    return kind
