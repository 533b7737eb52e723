"""The writer of a worker run: it records what the slots hand in (the outcomes of the jobs
they ran and the starts of the held jobs they take next) with one transaction for all the
requests waiting (`finish_and_start_runs`): group commit."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from functools import partial

from django.db import connection

from queues.api import JobStatus
from workers import metrics
from workers.runtime.allowance import Allowance
from workers.runtime.faults import GaveUp, retrying
from workers.runtime.handoffs import Request
from workers.runtime.state import RunState

logger = logging.getLogger("workers")

#: Group commit: while jobs are short (their runs average under this many seconds), the
#: writer waits up to this long for the slots still running one, so that one transaction
#: records them all instead of each write catching half of them. Long jobs are written at
#: once: their slots would only wait.
LINGER = 0.001


class Writer:
    def __init__(self, queue, state: RunState, allowance: Allowance, force) -> None:
        self.queue = queue
        self.using = getattr(queue, "using", "default")
        self.state = state
        self.allowance = allowance
        self.force: threading.Event = force  # only a forced stop gives up on a write

    def run(self) -> None:
        """Write waiting requests, all of them in one transaction: while one write is in
        flight the next requests gather, so a busy worker writes many per transaction and
        an idle one writes each at once."""
        state = self.state
        try:
            while True:
                with state.lock:
                    while not state.outbox and not state.finished.is_set():
                        state.requests.wait(0.1)
                    if not state.outbox:
                        return
                    self.linger()
                    batch, state.outbox, state.blocked = state.outbox, [], 0
                self.write(batch)
        finally:
            connection.close()

    def linger(self) -> None:
        """Wait (lock held), while jobs are short, until every busy slot waits for this
        write (the slots that go on without waiting hand in more meanwhile): one write for a
        claim's jobs, not one for every few."""
        state = self.state
        if state.run_time is None or state.run_time >= LINGER:
            return
        deadline = time.monotonic() + LINGER
        busy = state.concurrency - state.idle
        while not state.stopping and state.blocked < busy:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            state.requests.wait(left)
            busy = state.concurrency - state.idle

    def write(self, requests: list[Request]) -> None:
        finished = [r.finished for r in requests if r.finished is not None]
        starting = [r.start for r in requests if r.start is not None]
        checking = [r.check for r in requests if r.check is not None]
        given_back = [r.given_back for r in requests if r.given_back is not None]
        what = f"finishing {len(finished)} and starting {len(starting) + len(checking)} jobs"
        startable: set = set()
        try:
            if hasattr(self.queue, "write_runs"):  # a caller's queue may lack it
                answered: dict = {}  # kept across retries (`write_runs`)
                early = [r for r in requests if r.early]
                recorded, answers, startable = retrying(
                    lambda: self.queue.write_runs(
                        finished, starting, checking, answered, partial(_release, early)
                    ),
                    what=what,
                    using=self.using,
                    give_up=self.force,
                )
            else:
                recorded, answers = retrying(
                    lambda: self.queue.finish_and_start_runs(finished, starting),
                    what=what,
                    using=self.using,
                    give_up=self.force,
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
        if written:
            self.tally(finished, recorded)
        if finished:
            self.allowance.release(len(finished))
            self.state.done([job for job, _ in finished], written=True)
        if given_back:
            self.give_back(given_back)
        answer = iter(answers)
        for request in requests:
            if request.start is not None:
                request.answer = next(answer)
            if request.check is not None:
                request.startable = startable
            request.written.set()

    def tally(self, finished, recorded) -> None:
        """The stats and metrics of a write's outcomes: one locked update and one metric
        increment per kind of outcome, not per job."""
        kinds: Counter = Counter()
        completed = failed = 0
        for (job, outcome), result in zip(finished, recorded, strict=True):
            if result is None:
                logger.info("job %s finished after its run was taken back; outcome dropped", job.id)
                continue
            kinds[job.queue_name, outcome.kind, result.status] += 1
            if result.status == JobStatus.COMPLETED or outcome.kind == "completed":
                completed += 1
            else:
                failed += 1
        for (queue, kind, status), count in kinds.items():
            metrics.recorded(queue, kind, status, count)
        self.state.stats.add(processed=len(finished), completed=completed, failed=failed)

    def give_back(self, jobs: list) -> None:
        """Hand back runs that the database's outage cut short, attempt not counted: they
        are Pending again at once (this waits for the database to be back)."""
        for job in jobs:
            try:
                released = retrying(
                    lambda job=job: self.queue.release_job_run(job),
                    what=f"giving back job {job.id}",
                    using=self.using,
                    give_up=self.force,
                )
            except GaveUp:
                released = False  # still Running: the reaper takes it back
            except Exception:
                logger.exception("giving back job %s failed", job.id)
                released = False
            if released:
                logger.info("job %s given back after the database went away", job.id)
        self.state.stats.add(not_run=len(jobs))
        self.allowance.not_run(len(jobs))
        self.state.done(jobs, written=True)


def _release(requests: list[Request], startable: set) -> None:
    """The slots waiting only for their checks go on as soon as the checks are read (on
    MariaDB, before the transaction of the write's outcomes)."""
    for request in requests:
        request.startable = startable
        request.written.set()
