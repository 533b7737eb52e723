"""The writer of a process's worker runs: it records what their slots hand in (the outcomes of
the jobs they ran and the starts of the held jobs they take next), every queue's at once,
with one call for all the requests waiting (`write_runs`): group commit."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from functools import partial
from typing import TYPE_CHECKING

from django.db import connection

from queues.api import JobStatus
from workers import metrics
from workers.runtime.faults import GaveUp, retrying
from workers.runtime.handoffs import Request

if TYPE_CHECKING:
    from workers.runtime.hub import Lane

logger = logging.getLogger("workers")

#: Group commit: while jobs are short (their runs average under this many seconds), the
#: writer waits up to this long for the slots still running one, so that one transaction
#: records them all instead of each write catching half of them. Long jobs are written at
#: once: their slots would only wait.
LINGER = 0.001


class Writer:
    """Writes the requests of every lane of its hub (hub.py): one write for all of them."""

    def __init__(self, hub) -> None:
        self.hub = hub
        self.queue = hub.queue
        self.using = getattr(hub.queue, "using", "default")
        self.force: threading.Event = hub.force  # only a forced stop gives up on a write

    def run(self) -> None:
        """Write waiting requests, all of them in one transaction: while one write is in
        flight the next requests gather, so a busy worker writes many per transaction and
        an idle one writes each at once."""
        hub = self.hub
        try:
            while True:
                with hub.lock:
                    while not self.waiting() and not hub.closed:
                        hub.requests.wait()
                    if not self.waiting():
                        return
                    self.linger()
                    batch = []
                    for lane in hub.lanes:
                        state = lane.state
                        if state.outbox:
                            batch += [(lane, request) for request in state.outbox]
                            state.outbox, state.blocked = [], 0
                self.write(batch)
        finally:
            connection.close()

    def waiting(self) -> bool:
        return any(lane.state.outbox for lane in self.hub.lanes)

    def linger(self) -> None:
        """Wait (lock held), while jobs are short, until every busy slot waits for this
        write (the slots that go on without waiting hand in more meanwhile): one write for a
        claim's jobs, not one for every few."""
        short = [
            lane.state
            for lane in self.hub.lanes
            if lane.state.run_time is not None and lane.state.run_time < LINGER
        ]
        if not short:
            return
        deadline = time.monotonic() + LINGER
        while any(
            not state.stopping and state.blocked < state.concurrency - state.idle for state in short
        ):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.hub.requests.wait(left)

    def write(self, batch: list[tuple]) -> None:
        requests = [request for _, request in batch]
        finished = [r.finished for r in requests if r.finished is not None]
        owners = [lane for lane, r in batch if r.finished is not None]
        starting = [r.start for r in requests if r.start is not None]
        checking = [r.check for r in requests if r.check is not None]
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
        by_lane: dict[Lane, list] = {}
        for lane, pair, result in zip(owners, finished, recorded, strict=True):
            by_lane.setdefault(lane, []).append((pair, result))
        for lane, done in by_lane.items():
            if written:
                tally(lane, done)
            lane.allowance.release(len(done))
            lane.state.done([job for (job, _), _ in done], written=True)
        given_back: dict[Lane, list] = {}
        for lane, request in batch:
            if request.given_back is not None:
                given_back.setdefault(lane, []).append(request.given_back)
        for lane, jobs in given_back.items():
            self.give_back(lane, jobs)
        answer = iter(answers)
        for request in requests:
            if request.start is not None:
                request.answer = next(answer)
            if request.check is not None:
                request.startable = startable
            request.written.set()

    def give_back(self, lane: Lane, jobs: list) -> None:
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
        lane.state.stats.add(not_run=len(jobs))
        lane.allowance.not_run(len(jobs))
        lane.state.done(jobs, written=True)


def tally(lane: Lane, done: list) -> None:
    """The stats and metrics of a lane's outcomes in a write: one locked update and one
    metric increment per kind of outcome, not per job."""
    kinds: Counter = Counter()
    completed = failed = 0
    for (job, outcome), result in done:
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
    lane.state.stats.add(processed=len(done), completed=completed, failed=failed)


def _release(requests: list[Request], startable: set) -> None:
    """The slots waiting only for their checks go on as soon as the checks are read (on
    MariaDB, before the transaction of the write's outcomes)."""
    for request in requests:
        request.startable = startable
        request.written.set()
