"""The claimer of a worker run: it claims a batch sized by the free capacity, within the
throttle's permits and the rate limiters' tokens, and hands the jobs to the slots. A queue
with a limit or a rate (`queue_config(max_running=..., rate=...)`) may leave it less than
it asked for: it says so in the log when it starts waiting, then at most once a minute."""

from __future__ import annotations

import logging
import threading
import time
import uuid

from django.db import DatabaseError

from queues.api import Job
from workers.runtime.allowance import Allowance
from workers.runtime.faults import GaveUp, retrying
from workers.runtime.pickup import Pickup
from workers.runtime.state import RunState

logger = logging.getLogger("workers")

#: While a worker keeps waiting at its queue's limit, how often it says so (seconds).
LIMIT_LOG_EVERY = 60.0
#: While jobs are short, the longest an idle slot waits for half the slots to be idle
#: before a claim is made for the idle ones (seconds).
IDLE_SLOT_WAIT = 0.002
#: The most batches whose failure modes a claimer keeps (then it forgets them all).
MAX_BATCHES_KNOWN = 1024


class LimitLog:
    """The log lines of a worker that waits at its queue's limit: the first wait, then one
    line a minute with how often it waited meanwhile (never one a poll)."""

    def __init__(self, queue_name: str) -> None:
        self.queue_name = queue_name
        self.logged_at: float | None = None  # monotonic; None: not waiting at the limit
        self.waits = 0

    def claimed(self, limit: int | None, rate_until=None) -> None:
        """After each claim: the limit it stopped at, or when the next window of the rate
        it ran out of opens, or neither (None)."""
        if limit is None and rate_until is None:
            if self.logged_at is not None:
                logger.debug("queue %s is below its limit: claiming again", self.queue_name)
            self.logged_at = None
            return
        if limit is not None:
            what, until = f"its limit of {limit} running jobs", "for one to end"
        else:
            what, until = "its rate", f"for its next window ({rate_until:%H:%M:%S.%f} UTC)"
        now = time.monotonic()
        if self.logged_at is None:
            logger.info(
                "queue %s is at %s (every worker's): waiting %s",
                self.queue_name,
                what,
                until,
            )
            self.logged_at, self.waits = now, 0
        elif now - self.logged_at >= LIMIT_LOG_EVERY:
            logger.info(
                "queue %s: still at %s (%d waits since the last line)",
                self.queue_name,
                what,
                self.waits,
            )
            self.logged_at, self.waits = now, 0
        self.waits += 1

    @property
    def waiting(self) -> bool:
        return self.logged_at is not None


class Claimer:
    def __init__(self, worker, state: RunState, allowance: Allowance, options, stop) -> None:
        self.worker = worker
        self.queue = worker.queue
        self.queue_name = worker.queue_name
        self.state = state
        self.allowance = allowance
        self.options = options
        self.stop: threading.Event = stop  # the caller's stop: a claim gives up on it
        self.limit_log = LimitLog(self.queue_name)
        #: {batch id: whether it is fail-fast} of the batches whose jobs it claimed.
        self.fail_fast: dict[uuid.UUID, bool] = {}

    def run(self) -> None:
        """Claim until stopping (or, in burst mode, until the queue is empty)."""
        poll = self.worker.poll_interval.total_seconds()
        pickup = Pickup(self.queue, self.queue_name, self.state, poll, self.worker.burst)
        with pickup:
            self._run(pickup)

    def _run(self, pickup: Pickup) -> None:
        state = self.state
        batch_size = self.worker.batch_size
        while True:
            limited = self._limited()
            with state.lock:
                wanted = self._wait_for_room(batch_size, limited)
                if state.stopping:
                    return
            pickup.arm()
            asked, got = self.claim(wanted)
            pickup.claimed(got)
            if got and got == asked:
                continue  # maybe more where these came from
            with state.lock:
                # At the limit the queue is not empty: other workers run its jobs.
                empty = asked and not got and not self.limit_log.waiting
                if self.worker.burst and empty and not state.in_flight_count():
                    logger.info("queue %s is empty", self.queue_name)
                    return
            # The queue had less than asked for: claim again when new work may be there
            # (pickup.py), not at each job's end, which would poll an empty queue per job.
            pickup.sleep()

    def _limited(self) -> bool:
        """Whether the queue has a limit: a read (at most once a second), retried through
        a database outage like the claim itself: a worker must outlive the outage."""
        is_limited = getattr(self.queue, "is_limited", None)  # a caller's queue may lack it
        if is_limited is None:
            return False
        try:
            return bool(
                retrying(
                    lambda: is_limited(self.queue_name),
                    what="reading the queue's limits",
                    using=getattr(self.queue, "using", "default"),
                    give_up=self.stop,
                )
            )
        except GaveUp:
            return False  # stopping: the loop claims nothing more

    def _wait_for_room(self, batch_size: int, limited: bool) -> int:
        """Wait (lock held) until there is room for a claim, or the run stops: its size.
        While jobs are short, a claim waits for half the slots to be idle, but an idle slot
        waits no longer than `IDLE_SLOT_WAIT` for it (the other slots may be running long
        jobs), or, while a slot has a share left from a claim within the start window, until
        that window closes (the share's jobs are short: its slot will be idle by then)."""
        state = self.state
        patient, patient_until = True, None
        while not state.stopping:
            room = self._room(batch_size, limited, patient)
            if room > 0:
                return room
            if patient and state.idle and not state.held:
                now = time.monotonic()
                if patient_until is None:
                    patient_until = now + IDLE_SLOT_WAIT
                until = max(patient_until, state.shares_fresh_until())
                if now >= until:
                    patient = False
                    continue
                state.room.wait(until - now)
            else:
                state.room.wait()
        return 0

    def _room(self, batch_size: int, limited: bool, patient: bool = True) -> int:
        """How many jobs to claim now (lock held). On a limited queue no more than the free
        slots: a claimed job waiting for a slot counts against every worker's limit."""
        room = self.state.capacity(batch_size, patient)
        if limited:
            state = self.state
            room = min(
                room, state.concurrency - len(state.running) - state.shared + state.finishing
            )
        return room

    def claim(self, wanted: int) -> tuple[int, int]:
        """Claim up to `wanted` jobs within the free permits and tokens: (asked, got)."""
        n = self.allowance.take(wanted)
        jobs: list[Job] = []
        if n:
            try:
                jobs = retrying(
                    self._claim_call(n),
                    what="claiming jobs",
                    using=getattr(self.queue, "using", "default"),
                    give_up=self.stop,
                )
            except GaveUp:
                jobs = []
            claimed_at = time.monotonic()  # the claim's start window opens with its answer
            # A caller's queue may lack these.
            at_limit = getattr(self.queue, "at_limit", None)
            at_rate = getattr(self.queue, "at_rate", None)
            self.limit_log.claimed(
                at_limit(self.queue_name) if at_limit else None,
                at_rate(self.queue_name) if at_rate else None,
            )
        self.allowance.not_run(n - len(jobs))
        if jobs:
            logger.debug("claimed %d jobs from %s", len(jobs), self.queue_name)
            self.state.hold(jobs, self._plain_batches(jobs), claimed_at)
        return n, len(jobs)

    def _plain_batches(self, jobs: list[Job]) -> set[uuid.UUID]:
        """The batches of `jobs` known not to be fail-fast, whose held jobs start on the
        claim's checks as jobs in no batch do. A batch's mode never changes: each is read
        once (`fail_fast_batches`). One try, never retried: the claimed jobs wait for it, and
        if it fails their batches' jobs get reads of their own until a later claim's read
        works (the claim's faults are the next claim's to retry)."""
        batches = {job.batch_id for job in jobs if job.batch_id is not None}
        known = self.fail_fast
        new = batches.difference(known)
        read = getattr(self.queue, "fail_fast_batches", None)  # a caller's queue may lack it
        if new and read is not None:
            try:
                fail_fast = read(new)
            except DatabaseError as exc:
                logger.info("reading the failure modes of %d batches failed: %s", len(new), exc)
                fail_fast = None
            if fail_fast is not None:
                if len(known) + len(new) > MAX_BATCHES_KNOWN:
                    known.clear()
                known.update((batch_id, batch_id in fail_fast) for batch_id in new)
        return {batch_id for batch_id in batches if known.get(batch_id) is False}

    def _claim_call(self, n: int):
        """A claim of `n` jobs that can be retried after a fault: the claim has its own run
        token, so if the fault hid a claim that was committed, the retry with that token
        gets its jobs back from the engine (`dequeue` finds its own earlier claim) instead
        of leaving them Running until their lease expires."""
        options = self.options.with_batch_size(n)
        token = uuid.uuid4()
        # Named only when set: a queue of the caller's own may not take the keyword.
        stamp = {"claimed_by": self.worker.claimed_by} if self.worker.claimed_by else {}

        def claim() -> list[Job]:
            return self.queue.dequeue(self.queue_name, options, run_token=token, **stamp)

        return claim
