"""Short jobs: claimed for the idle slots only, a share each (`RunState.capacity`,
`RunState.take`), so that no claimed job waits for a busy slot and none needs a start check:
each starts on its claim's checks within the claim's start window, else on its start marker.
Jobs that are not short are claimed a batch ahead, as the seed's scenarios have it.

On the real database, with real threads; the claim's start window is widened where a test
needs every held job fresh whatever the machine's load."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from threading import Barrier, BrokenBarrierError

import pytest
from django.utils import timezone

from queues.api import Job, JobBatch, JobQueue, JobStatus, PartialFailureMode
from tests.conftest import unique_queue
from tests.workers.support.helpers import enqueue_jobs, running, wait_for_status, wait_until
from workers.api import ThrottleConfig, Worker
from workers.runtime import RunState, WorkerRun, handoffs
from workers.runtime.claimer import IDLE_SLOT_WAIT, Claimer
from workers.runtime.handoffs import Share
from workers.runtime.shutdown import release_unstarted
from workers.runtime.slots import Slot

pytestmark = pytest.mark.django_db(transaction=True)

SHORT = 0.0001  # a handlers' moving average run time: short jobs


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(handoffs, "FRESH_START", 600.0)  # every held job is "just claimed"


def idle_slot(n: int, batch: list[Job] | None = None, mode=PartialFailureMode.CONTINUE_ON_ERROR):
    """A worker run of one slot holding a fresh claim of `n` jobs of a new queue (or of the
    jobs of one batch of `batch`, in `mode`), its jobs short: (queue, run, slot, jobs)."""
    queue = JobQueue()
    name = unique_queue("short")
    if batch is None:
        enqueue_jobs(queue, name, n)
    else:
        for job in batch:
            job.queue_name = name
        queue.enqueue_batch(JobBatch("b", jobs=batch, partial_failure_mode=mode))
    worker = Worker(queue, name, lambda job: None, batch_size=n, batch_concurrency=1)
    run = WorkerRun(worker, threading.Event(), threading.Event())
    run.state.run_time = SHORT
    assert run.claimer.claim(n) == (n, n)
    slot = Slot(worker, run.state, run.allowance, run.loop, run._runaway, run.checks)
    return queue, run, slot, [held.job for held in run.state.held]


def take(run, slot):
    return run.state.take(False, slot.key, run.worker.batch_size)


def test_an_idle_slot_takes_its_share_of_a_claim_and_starts_it_with_no_write(fresh):
    queue, run, slot, jobs = idle_slot(5)
    assert run.state.per_slot(5) == 5, "one slot: the claim is its share"
    assert take(run, slot).job is jobs[0]
    assert list(run.state.shares[slot.key].jobs) == jobs[1:]
    assert run.state.in_flight_count() == 5, "the share is held still"
    assert [slot._from_share() for _ in range(4)] == jobs[1:], "each on the claim's checks"
    assert run.state.outbox == [], "no start marker, no check"
    for job in jobs:
        stored = queue.get_job(job.id)
        assert (stored.status, stored.started_at) == (JobStatus.RUNNING, job.started_at)


def test_a_share_job_taken_after_the_start_window_starts_on_its_start_marker(monkeypatch):
    queue, run, slot, (first, later) = idle_slot(2)
    monkeypatch.setattr(handoffs, "FRESH_START", 600.0)
    assert take(run, slot).job is first
    claimed_start = later.started_at
    monkeypatch.setattr(handoffs, "FRESH_START", 0.0)  # the claim's window has passed
    writer = threading.Thread(target=run.writer.run, daemon=True)
    writer.start()
    try:
        assert slot._from_share() is later
        stored = queue.get_job(later.id)
        assert stored.started_at > claimed_start, "its start marker, after the claim"
        assert stored.started_at == later.started_at
    finally:
        run.hub.close()
        writer.join(10)


def test_a_share_is_released_with_the_held_jobs_when_the_run_stops(fresh):
    """Pending again at once, no attempt counted, whatever its slot is running."""
    queue, run, slot, jobs = idle_slot(4)
    assert take(run, slot).job is jobs[0]
    run.state.set_stopping()
    assert slot._from_share() is None, "a stop: the share does not start"
    release_unstarted(run.worker, run.state, run.allowance, threading.Event())
    for job in jobs[1:]:
        stored = queue.get_job(job.id)
        assert (stored.status, stored.attempts, stored.started_at) == (JobStatus.PENDING, 0, None)
    assert run.state.in_flight_count() == 1 and run.state.shared == 0


def test_a_share_leaves_out_the_jobs_of_a_fail_fast_batch(fresh):
    """Another job of the batch may fail before they start, which only a read tells."""
    _, run, slot, jobs = idle_slot(
        3, [Job(queue_name="") for _ in range(3)], PartialFailureMode.FAIL_FAST
    )
    held = take(run, slot)
    assert held.job is jobs[0] and not held.fresh(), "it starts on its own start marker"
    assert not run.state.has_share(slot.key) and len(run.state.held) == 2


def test_a_share_takes_the_jobs_of_a_batch_that_is_not_fail_fast(fresh):
    """Such a batch's failures fail none of its other jobs: they start on their claim's
    checks, as jobs in no batch do."""
    _, run, slot, jobs = idle_slot(3, [Job(queue_name="") for _ in range(3)])
    assert take(run, slot).job is jobs[0]
    assert list(run.state.shares[slot.key].jobs) == jobs[1:]


def state(concurrency: int, run_time: float | None) -> RunState:
    stats = Worker(JobQueue(), "q", lambda job: None).stats
    state = RunState(stats, concurrency)
    state.run_time = run_time
    return state


def share_of(count: int) -> Share:
    share = Share()
    share.jobs.extend(Job(queue_name="") for _ in range(count))
    return share


def test_short_jobs_are_claimed_for_the_slots_with_no_share_left_once_half_are_idle():
    short = state(4, SHORT)
    assert short.per_slot(8) == 2, "a batch of eight among four slots"
    short.running = {i: object() for i in range(3)}
    short.idle = 1
    assert short.capacity(8) == 0, "one slot of four idle: the claim waits"
    assert short.capacity(8, patient=False) == 2, (
        "past the wait: a share for the idle slot alone, the others may be in long runs"
    )
    short.running, short.idle = {i: object() for i in range(2)}, 2
    assert short.capacity(12) == 12, (
        "half the slots idle: a share for every slot, the busy ones on their last short job"
    )
    short.shares = {1: share_of(2), 2: share_of(0)}
    short.shared = 2
    assert short.capacity(12) == 9, "none for the slot with a share left"
    short.shares, short.shared = {}, 0
    short.running, short.idle = {}, 4
    assert short.capacity(8) == 8
    short.held.append(object())
    assert short.capacity(8) == 0, "no claim while a claim's jobs wait to be taken"


class Waits:
    """A `room.wait` that records its timeouts, waits them out if `elapse` (no slot wakes
    the claimer), and stops the run at the third."""

    def __init__(self, state: RunState, elapse: bool) -> None:
        self.state, self.elapse, self.timeouts = state, elapse, []

    def __call__(self, timeout=None):
        self.timeouts.append(timeout)
        if self.elapse and timeout is not None:
            time.sleep(timeout)
        if len(self.timeouts) == 3:
            self.state.stopping = True
        return False


def waiting_claimer(short: RunState, elapse: bool = False) -> tuple[Claimer, Waits]:
    claimer = Claimer.__new__(Claimer)
    claimer.state = short
    short.room.wait = waits = Waits(short, elapse)
    return claimer, waits


def test_an_idle_slot_waits_for_the_shares_of_a_fresh_claim_then_claims_for_itself(fresh):
    """Slots with a share left from a claim within the start window run short jobs: an idle
    slot waits for them until the window closes, not only `IDLE_SLOT_WAIT`; past it, the
    other slots may be in long runs, and it claims a share of its own."""
    short = state(4, SHORT)
    short.running = {i: object() for i in range(3)}
    short.idle = 1
    share = share_of(3)
    share.claimed_at = time.monotonic()
    short.shares, short.shared = {1: share}, 3
    assert short.capacity(8) == 0, "the share counts as work: the claim waits"
    claimer, waits = waiting_claimer(short)
    assert claimer._wait_for_room(8, limited=False) == 0
    assert IDLE_SLOT_WAIT < waits.timeouts[0] <= handoffs.FRESH_START, waits.timeouts
    share.claimed_at -= handoffs.FRESH_START  # the window closed: the share's slot is slow
    short.stopping = False
    claimer, waits = waiting_claimer(short, elapse=True)
    assert claimer._wait_for_room(8, limited=False) == 2, "a share for the idle slot"
    # (Its deadline less the time it was read at: IDLE_SLOT_WAIT, give or take a rounding.)
    assert waits.timeouts and max(waits.timeouts) <= IDLE_SLOT_WAIT + 1e-6, waits.timeouts


def test_jobs_that_are_not_short_are_claimed_a_batch_ahead():
    for run_time in (None, handoffs.FRESH_START):  # not known yet, or long
        long = state(4, run_time)
        assert long.per_slot(8) == 1
        long.running = {i: object() for i in range(4)}
        assert long.capacity(8) == 4, "the batch refilled while every slot is busy"


class CountingQueue(JobQueue):
    """The real queue, with the size of each claim and the start checks each write carried."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: list[int] = []
        self.checks = 0

    def dequeue(self, *args, **kwargs):
        jobs = super().dequeue(*args, **kwargs)
        if jobs:
            self.claims.append(len(jobs))
        return jobs

    def write_runs(self, finished, starting, checking, *args):
        self.checks += len(checking)
        return super().write_runs(finished, starting, checking, *args)


def test_a_worker_running_short_jobs_claims_for_its_idle_slots_with_no_start_checks(fresh):
    queue = CountingQueue()
    name = unique_queue("short_run")
    count = 600
    ids = enqueue_jobs(queue, name, count)

    def handler(job):
        return {"n": job.payload["i"]}

    worker = Worker(queue, name, handler, batch_size=40, batch_concurrency=4,
                    poll_interval=timedelta(milliseconds=20))  # fmt: skip
    with running(worker):
        wait_for_status(queue, name, "Completed", count, 60)
    assert [queue.get_job(job_id).result for job_id in ids[:3]] == [{"n": i} for i in range(3)]
    assert all(queue.get_job(job_id).attempts == 1 for job_id in ids[::50])
    assert queue.claims[0] == 40, "the first claim, before any run time: a batch ahead"
    assert max(queue.claims[1:]) <= 4 * 8, "then a share (at most eight) for each idle slot"
    assert queue.checks == 0, "no claimed job waited for a busy slot"


def test_an_idle_slot_does_not_wait_for_slots_running_long_jobs():
    """Three of four slots stay in long runs: the fourth still gets claims of its own."""
    queue = JobQueue()
    name = unique_queue("short_long")
    gate = threading.Event()
    long_ids = [queue.enqueue(Job(queue_name=name, payload={"long": True}, priority=4))
                for _ in range(3)]  # fmt: skip
    enqueue_jobs(queue, name, 60)

    def handler(job):
        if job.payload.get("long"):
            gate.wait(60)
        return {"ok": True}

    worker = Worker(queue, name, handler, batch_size=16, batch_concurrency=4,
                    poll_interval=timedelta(milliseconds=20))  # fmt: skip
    try:
        with running(worker):
            wait_for_status(queue, name, "Completed", 60, 60)
            assert {queue.get_job(job_id).status for job_id in long_ids} == {JobStatus.RUNNING}
            gate.set()
            wait_for_status(queue, name, "Completed", 63, 30)
    finally:
        gate.set()


def test_a_claim_of_short_jobs_is_never_larger_than_the_batch():
    many = state(10, SHORT)
    many.idle = 10
    assert many.per_slot(30) == 3 and many.capacity(30) == 30
    assert many.per_slot(500) == handoffs.MAX_SHARE and many.capacity(500) == 80
    assert many.per_slot(5) == 1 and many.capacity(5) == 5, "fewer jobs than slots: one each"


def test_a_claim_cut_short_is_split_among_the_idle_slots(fresh):
    """A limit, a rate or the queue's last jobs may leave a claim smaller than the idle slots'
    shares: each idle slot still gets its part, not one slot all of it."""
    _, run, slot, jobs = idle_slot(4)
    run.state.concurrency = 4
    run.state.idle = 3  # three other slots wait for held jobs
    assert run.state.per_slot(32) == 8
    assert run.state.take(False, slot.key, 32).job is jobs[0]
    assert not run.state.has_share(slot.key), "one job each"
    assert len(run.state.held) == 3


@pytest.mark.parametrize("limit", ["max_running", "throttle"])
def test_short_jobs_of_a_limited_worker_still_run_in_every_slot(fresh, limit):
    """At its queue's limit (or its throttle's) of four, a worker of four slots claims four
    jobs at a time, at most: each must go to a slot of its own. Every handler waits for the
    other three at a barrier; a slot that took two would leave it broken."""
    queue = JobQueue()
    name = unique_queue("short_limited")
    count = 40  # ten rounds of the barrier
    ids = enqueue_jobs(queue, name, count)
    barrier = Barrier(4, timeout=20)
    broken: list = []

    def handler(job):
        try:
            barrier.wait()
        except BrokenBarrierError:
            broken.append(job.id)
            raise
        return {"n": job.payload["i"]}

    options = {"batch_size": 32, "batch_concurrency": 4}
    if limit == "max_running":
        queue.queue_config(name, max_running=4)
    else:
        options["throttle_config"] = ThrottleConfig(max_concurrent=4)
    worker = Worker(queue, name, handler, poll_interval=timedelta(milliseconds=20), **options)
    try:
        with running(worker):
            wait_for_status(queue, name, "Completed", count, 120)
    finally:
        barrier.abort()
    assert broken == []
    assert queue.get_job(ids[-1]).result == {"n": count - 1}


class GatedRun:
    """A worker run of short jobs on a new queue, whose jobs are claimed in the order of
    `kinds` then `extra` short ones: a "long" job runs until the gate opens. Records the
    size of each claim."""

    def __init__(self, kinds: list[str], extra: int, batch_size: int, concurrency: int):
        self.queue, self.name = JobQueue(), unique_queue("gated")
        start = timezone.now() - timedelta(minutes=1)
        kinds = [*kinds, *["short"] * extra]
        at = [start + timedelta(milliseconds=i) for i in range(len(kinds))]
        self.ids = self.queue.enqueue_many([
            Job(queue_name=self.name, payload={"kind": kind}, scheduled_at=at[i])
            for i, kind in enumerate(kinds)
        ])  # fmt: skip
        self.extra = self.ids[-extra:]
        self.gate, self.claims = threading.Event(), []
        dequeue = self.queue.dequeue

        def recorded(*args, **kwargs):
            jobs = dequeue(*args, **kwargs)
            self.claims.append(len(jobs))
            return jobs

        self.queue.dequeue = recorded
        worker = Worker(
            self.queue, self.name, self.handler, batch_size=batch_size,
            batch_concurrency=concurrency, poll_interval=timedelta(milliseconds=20),
        )  # fmt: skip
        self.run = WorkerRun(worker, threading.Event(), threading.Event())
        self.run.state.run_time = SHORT  # known short from the first claim
        self.thread = threading.Thread(target=self.run.run, daemon=True)

    def handler(self, job):
        if job.payload["kind"] == "long":
            self.gate.wait(60)
        return {"kind": job.payload["kind"]}

    def completed(self, ids) -> int:
        return Job.objects.filter(id__in=ids, status=JobStatus.COMPLETED).count()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.gate.set()
        self.run.stop.set()
        self.thread.join(30)


def test_an_idle_slot_is_not_kept_waiting_by_shares_behind_long_jobs():
    """Three slots of four start a long job with a short one left in their share; the
    fourth, idle, claims for itself once the first claim's start window has closed."""
    kinds = ["long", "short", "long", "short", "long", "short", "short", "short"]
    with GatedRun(kinds, extra=20, batch_size=8, concurrency=4) as gated:
        wait_until(lambda: gated.completed(gated.extra) == 20, 30, f"claims {gated.claims}")
        assert gated.completed(gated.ids[:8:2][:3]) == 0, "the long jobs still run"


def test_a_claim_past_the_wait_is_sized_for_the_idle_slots_only():
    """Three slots of four end their share on a long job: the fourth's claims are a share
    for itself, not for the slots in long runs (their jobs would wait past the claim's
    start window)."""
    kinds = ["long" if i in (7, 15, 23) else "short" for i in range(32)]
    with GatedRun(kinds, extra=24, batch_size=32, concurrency=4) as gated:
        wait_until(lambda: gated.completed(gated.extra) == 24, 30, f"claims {gated.claims}")
        assert gated.claims[0] == 32, gated.claims
        assert max(size for size in gated.claims[1:]) <= 8, gated.claims
