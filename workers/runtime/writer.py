"""The writer of a process's worker runs: it records what their slots hand in (the outcomes of
the jobs they ran and the starts of the held jobs they take next), every queue's at once,
with one call for all the requests waiting (`write_runs`): group commit."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from functools import partial

from django.db import connection

from queues.api import JobStatus
from workers import metrics
from workers.runtime.faults import GaveUp, retrying
from workers.runtime.handoffs import Request

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
                    hub.prune()
                self.write(batch)
        finally:
            connection.close()

    def waiting(self) -> bool:
        return any(lane.state.outbox for lane in self.hub.lanes)

    def linger(self) -> None:
        """Wait (lock held), while jobs are short, until the busy slots wait for this write
        (the slots that go on without waiting hand in more meanwhile): one write for a
        claim's jobs, not one for every few. A queue whose requests are in, and whose
        slots can only wait for them, is written at once: its slots do not wait for another
        queue's."""
        states = [lane.state for lane in self.hub.lanes]
        if not any(_short(state) for state in states):
            return
        deadline = time.monotonic() + LINGER
        while not any(state.outbox and _written_now(state) for state in states):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.hub.requests.wait(left)

    def write(self, batch: list[tuple], answered: dict | None = None) -> None:
        """Write `batch` ((lane, request) pairs) in one call; `answered`: the completions an
        earlier call of the same requests committed (`write_runs`), by their index."""
        requests = [request for _, request in batch]
        finished = [r.finished for r in requests if r.finished is not None]
        owners = [lane for lane, r in batch if r.finished is not None]
        starting = [r.start for r in requests if r.start is not None]
        checking = [r.check for r in requests if r.check is not None]
        what = f"finishing {len(finished)} and starting {len(starting) + len(checking)} jobs"
        startable: set = set()
        answered = {} if answered is None else answered  # kept across retries (`write_runs`)
        try:
            if hasattr(self.queue, "write_runs"):  # a caller's queue may lack it
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
            lanes = list(dict.fromkeys(lane for lane, _ in batch))
            if not isinstance(exc, GaveUp) and len(lanes) > 1:
                # A bug that one queue's requests meet must not drop every queue's: each
                # queue's are written again on their own.
                logger.exception("writing %s failed; writing each queue's alone", what)
                self._write_apart(batch, lanes, answered)
                return
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
        try:
            self._settle(batch, owners, finished, recorded, written)
        finally:
            answer = iter(answers)
            for request in requests:
                if request.start is not None:
                    request.answer = next(answer)
                if request.check is not None:
                    request.startable = startable
                request.written.set()

    def _write_apart(self, batch: list[tuple], lanes: list, answered: dict) -> None:
        """Write each lane's requests of `batch` alone, with the completions `answered`
        already committed (indexed in the whole batch's outcomes)."""
        index = iter(range(len(batch)))
        at = [next(index) if request.finished is not None else None for _, request in batch]
        for lane in lanes:
            mine = [i for i, (owner, _) in enumerate(batch) if owner is lane]
            finished_at = [at[i] for i in mine if at[i] is not None]
            own = {j: answered[i] for j, i in enumerate(finished_at) if i in answered}
            self.write([batch[i] for i in mine], own)

    def _settle(self, batch, owners, finished, recorded, written: bool) -> None:
        """Each lane's part of a write: its stats and metrics, its allowance, its running
        jobs, its runs given back. One lane's failure here leaves the others' alone."""
        by_lane: dict = {}  # by lane (hub.py)
        for lane, pair, result in zip(owners, finished, recorded, strict=True):
            by_lane.setdefault(lane, []).append((pair, result))
        given_back: dict = {}
        for lane, request in batch:
            if request.given_back is not None:
                given_back.setdefault(lane, []).append(request.given_back)
        for lane in dict.fromkeys(lane for lane, _ in batch):
            try:
                done = by_lane.get(lane, [])
                if done:
                    if written:
                        tally(lane, done)
                    lane.allowance.release(len(done))
                    lane.state.done([job for (job, _), _ in done], written=True)
                if lane in given_back:
                    self.give_back(lane, given_back[lane])
            except Exception:
                logger.exception("recording a write's outcomes for %s failed", lane.name)

    def give_back(self, lane, jobs: list) -> None:
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


def _short(state) -> bool:
    return state.run_time is not None and state.run_time < LINGER


def _written_now(state) -> bool:
    """Whether a lane's requests go without a linger (lock held): its jobs are not short
    (its slots would only wait), it stops, or every busy slot waits for the write."""
    return not _short(state) or state.stopping or state.blocked >= state.concurrency - state.idle


def tally(lane, done: list) -> None:
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
