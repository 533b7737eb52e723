"""The state a worker run's threads share, and the one lock that guards it: the held jobs,
the running ones and the writer's outbox, with a condition per kind of waiter so that a
notification wakes only the threads it concerns. See docs/design/worker.md."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Collection
from uuid import UUID

from queues.api import Job, JobOutcome
from workers import metrics
from workers.runtime import handoffs
from workers.runtime.handoffs import MAX_SHARE, HeldJob, Request, Share

#: How often one job's run may be given back in a worker run because the database went away
#: under it; after that its next such failure counts as a failure of its own. A job whose
#: handler breaks its connection every time (a query that crashes the server) must not run
#: for ever without spending an attempt.
MAX_GIVEN_BACK = 3


class RunState:
    def __init__(
        self,
        stats,
        concurrency: int,
        unwritten_limit: int = 0,
        lock: threading.Lock | None = None,
        requests: threading.Condition | None = None,
    ) -> None:
        """`lock` and `requests` (its condition) are the hub's, shared by the runs of a
        process so that one writer waits for them all (hub.py)."""
        self.stats = stats
        self.concurrency = concurrency
        #: How many outcomes may wait for the writer while their slots go on (slots.py): a
        #: writer that falls behind makes the slots wait, not the outbox grow.
        self.unwritten_limit = unwritten_limit
        self.lock = threading.Lock() if lock is None else lock
        self.work = threading.Condition(self.lock)  # slots: a held job to take
        self.room = threading.Condition(self.lock)  # claimer, shutdown: capacity, running
        # The writer: the outbox.
        self.requests = threading.Condition(self.lock) if requests is None else requests
        self.held: deque[HeldJob] = deque()
        # By run (the claimed `Job` object), not by job id: a job retried at once can be
        # claimed again, and taken by a slot, between its last run's commit and the
        # writer's `done` of that run, which must then not take the new run off.
        self.running: dict[int, Job] = {}
        # Of `running`, the jobs whose outcome waits for the writer: done with their slot.
        self.finishing = 0
        self.idle = 0  # slots waiting for a held job
        # Requests waiting for the writer; their jobs stay in `running` until written.
        self.outbox: list[Request] = []
        self.blocked = 0  # of the outbox's requests, those whose slot waits for the write
        self.shares: dict[int, Share] = {}  # by slot
        self.shared = 0  # the jobs in `shares`
        self.stopping = False
        self.stopped = threading.Event()  # set with `stopping`, for waits without the lock
        self.wake = threading.Event()  # ends the claimer's sleep: set on stop and by pickup
        self.finished = threading.Event()  # the run is over
        self.run_time: float | None = None  # moving average of the handlers' run times
        self.given_back: dict = {}  # how often each job's run was given back (lock held)

    def set_stopping(self) -> None:
        with self.lock:
            self.stopping = True
            self.stopped.set()
            self.wake.set()
            for condition in (self.work, self.room, self.requests):
                condition.notify_all()

    def in_flight(self) -> list[Job]:
        """Every job held or running (for the heartbeat)."""
        with self.lock:
            shared = (job for share in self.shares.values() for job in share.jobs)
            return [*(held.job for held in self.held), *shared, *self.running.values()]

    def running_jobs(self) -> list[Job]:
        """Every job a slot took (for the checks of lost runs)."""
        with self.lock:
            return list(self.running.values())

    def in_flight_count(self) -> int:
        return len(self.held) + self.shared + len(self.running)

    def capacity(self, batch_size: int, patient: bool = True) -> int:
        """How many jobs a claim may take now (lock held). `patient`: while jobs are short,
        none until half the slots are idle."""
        # No claim while a claim's jobs wait to be taken.
        if self.held:
            return 0
        per_slot = self.per_slot(batch_size)
        if per_slot == 1:
            # A batch ahead, sized to fill the batch again: batches stay large and the slots
            # do not wait for a claim. Jobs only waiting for their outcome's write leave
            # within a write: counting them would make the claims that come while they wait
            # too small to refill the batch.
            return batch_size - len(self.running) - self.shared + self.finishing
        # Short jobs: claimed once half the slots are idle (or nothing else runs), one
        # claim for them, not one a slot: a share for each slot with none left (idle, or
        # on its share's last job, which is short), so that no claimed job waits longer
        # than that and none needs a check before it starts (`take`). Past the claimer's
        # patience, the other slots may be in long runs: a share for each idle slot only.
        if not patient:
            return min(batch_size, self.idle * per_slot)
        busy = len(self.running) > self.finishing or self.shared  # a share left is work
        if self.idle * 2 < self.concurrency and busy:
            return 0
        sharing = sum(1 for share in self.shares.values() if share.jobs)
        return min(batch_size, (self.concurrency - sharing) * per_slot)

    def shares_fresh_until(self) -> float:
        """When (monotonic) the last share left leaves its claim's start window (0.0: no
        share left). Until then its slot runs short jobs, all of them within the window."""
        claims = [share.claimed_at for share in self.shares.values() if share.jobs]
        return max(claims) + handoffs.FRESH_START if claims else 0.0

    def per_slot(self, batch_size: int) -> int:
        """The jobs an idle slot takes from one claim: while jobs are short enough that a
        share's last job starts within the claim's start window, a batch split among the
        slots (at most `MAX_SHARE`); else one."""
        most = max(1, min(MAX_SHARE, batch_size // self.concurrency))
        if self.run_time is None or self.run_time * most >= handoffs.FRESH_START:
            return 1
        return most

    def hold(
        self, jobs: list[Job], plain_batches: Collection[UUID] = (), claimed_at: float | None = None
    ) -> None:
        """Hold a claim's jobs for the slots, claimed at `claimed_at` (monotonic; None: now).
        Those of `plain_batches` (batches known not to be fail-fast) start on the claim's
        checks as jobs in no batch do."""
        claimed_at = time.monotonic() if claimed_at is None else claimed_at
        with self.lock:
            self.held.extend(
                HeldJob(job, claimed_at, job.batch_id is None or job.batch_id in plain_batches)
                for job in jobs
            )
            self.stats.add(held=len(jobs))
            self.work.notify(len(jobs))

    def unhold_all(self) -> list[Job]:
        """Take every held job off the run (at shutdown): they will not start here."""
        with self.lock:
            jobs = [held.job for held in self.held]
            for share in self.shares.values():
                jobs += share.jobs
                share.jobs.clear()
            self.held.clear()
            self.shared = 0
            self.stats.add(held=-len(jobs))
            return jobs

    # Slots ------------------------------------------------------------------------------
    def take(self, wait: bool, share_key: int = 0, batch_size: int = 1) -> HeldJob | None:
        """The next held job, now running (None when stopping, or if none and not `wait`).
        While jobs are short, a fresh one comes with more fresh jobs of its claim, held
        still in the share of `share_key` (`take_shared`): a slot that wakes for a claim
        takes its part of it at once, the held jobs split among the idle slots."""
        with self.lock:
            self.idle += 1
            per_slot = self.per_slot(batch_size)
            if per_slot > 1 and not self.held:
                self.room.notify_all()  # claims of short jobs wait for idle slots
            while wait and not self.stopping and not self.held:
                self.work.wait()
            # This slot's part: a claim cut short (a limit, a rate, the queue's last jobs)
            # must still reach every idle slot.
            part = min(self.per_slot(batch_size), -(-len(self.held) // self.idle))
            self.idle -= 1
            held = self._take_locked()
            if held is not None and part > 1 and held.fresh():
                share = self.shares.setdefault(share_key, Share())
                share.claimed_at = held.claimed_at
                while len(share.jobs) < part - 1 and self.held and self.held[0].fresh():
                    share.jobs.append(self.held.popleft().job)
                    self.shared += 1
                if not self.held:
                    self.room.notify_all()  # as `_take_locked`: the claimer claims again
            return held

    def _take_locked(self) -> HeldJob | None:
        if self.stopping or not self.held:
            return None
        held = self.held.popleft()
        self.running[id(held.job)] = held.job
        metrics.started(held.job)
        self.stats.add(held=-1, running=1)
        if not self.held:
            # The claimer claims again once every held job has started: wake it, or it
            # waits for a job to finish (forever, if none does).
            self.room.notify_all()
        return held

    def submit(
        self,
        finished: tuple[Job, JobOutcome] | None = None,
        start: Job | None = None,
        take_next: bool = False,
        given_back: Job | None = None,
        wait: bool = True,
        check_next: bool = False,
    ) -> Request:
        """Hand the writer an outcome to record (or a run to give back) and/or a held job
        to start (with `take_next`, the next held job, if any, with a start marker; with
        `check_next`, the next held job, checked by the write if it is recent, else with a
        start marker); wait for
        the write, unless `wait` is False, no held job was taken and fewer than
        `unwritten_limit` outcomes already wait for it."""
        check = None
        with self.lock:
            behind = self.finishing >= self.unwritten_limit
            early = check_next and not wait and not behind
            if not wait and behind:
                wait = True  # the writer is behind: this slot waits for it
            # Under one lock with the take: the claimer, woken when the take empties `held`,
            # must already count the finished job as finishing, or it claims too few.
            if finished is not None or given_back is not None:
                self.finishing += 1
            if take_next or check_next:
                held = self._take_locked()
                if held is not None and check_next and held.recent():
                    check = held.job
                elif held is not None:
                    start = held.job
                wait = wait or held is not None
            request = Request(finished, start, given_back, check)
            request.early = early and check is not None
            self.outbox.append(request)
            if wait:
                self.blocked += 1
            # The writer waits for the first request, and while it lingers, for the last busy
            # slot to wait for it (it wakes at the linger's end anyway): a wake-up a request
            # cost the writer a tenth of a short job's CPU.
            if len(self.outbox) == 1 or (wait and self.blocked >= self.concurrency - self.idle):
                self.requests.notify()
        if wait:
            request.written.wait()
        return request

    def take_shared(self, key: int) -> tuple[Job, float] | None:
        """The next job of the share of `key`, now running, and when its claim was answered
        (monotonic); None when stopping: the stop releases the share."""
        with self.lock:
            share = self.shares.get(key)
            if self.stopping or share is None or not share.jobs:
                return None
            job = share.jobs.popleft()
            self.shared -= 1
            self.running[id(job)] = job
            metrics.started(job)
            self.stats.add(held=-1, running=1)
            return job, share.claimed_at

    def has_share(self, key: int) -> bool:
        share = self.shares.get(key)
        return share is not None and bool(share.jobs)

    def done(self, jobs: list[Job], written: bool = False) -> None:
        """The jobs are off this run's hands. `written`: they were finishing (their outcome
        went to the writer)."""
        with self.lock:
            for job in jobs:
                del self.running[id(job)]
            if written:
                self.finishing -= len(jobs)
            self.stats.add(running=-len(jobs))
            self.room.notify_all()

    def may_give_back(self, job: Job) -> bool:
        """Whether `job`'s run, cut short by the database's outage, may be given back."""
        with self.lock:
            count = self.given_back.get(job.id, 0) + 1
            self.given_back[job.id] = count
            return count <= MAX_GIVEN_BACK

    def note_run_time(self, took: float) -> None:
        # Unlocked: a lost update among racing slots only nudges a heuristic.
        last = self.run_time
        self.run_time = took if last is None else 0.8 * last + 0.2 * took
