"""TestQueue against the database queue, step by step: a seeded random sequence of operations
(enqueues, workflows, batches, claims, outcomes, releases, heartbeats, the reaper, pauses and
the operators' actions, with the clock moved between them) runs on both, and after each step
the two must have answered alike and hold the same jobs, batches and workflows."""

from __future__ import annotations

import copy
import os
import random
from datetime import UTC, datetime, timedelta

import pytest

from queues.api import (
    DequeueOptions,
    FailurePolicy,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobPriority,
    JobQueue,
    MockClock,
    PartialFailureMode,
    PriorityWeights,
    QueueError,
    RetryStrategy,
    TestQueue,
)
from queues.models import Batch, Workflow

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
QUEUES = ("a", "b")
COLUMNS = (
    "queue_name",
    "status",
    "priority",
    "attempts",
    "max_attempts",
    "created_at",
    "scheduled_at",
    "started_at",
    "completed_at",
    "failed_at",
    "timed_out_at",
    "error_message",
    "result",
    "cron_schedule",
    "next_run_at",
    "recurring",
    "batch_id",
    "workflow_id",
    "depends_on",
    "dependency_status",
    "lease_expires_at",
    "last_heartbeat_at",
)


def _job_state(job: Job) -> dict:
    return {name: getattr(job, name) for name in COLUMNS}


def _group_state(row) -> tuple:
    return (row.status, row.total_jobs, row.completed_jobs, row.failed_jobs, row.completed_at)


class Twins:
    """The same operation on both queues; each answer is compared."""

    def __init__(self, seed: int) -> None:
        self.db = JobQueue(clock=MockClock(T0), rng=random.Random(seed))
        self.mem = TestQueue(clock=MockClock(T0), rng=random.Random(seed))
        self.rng = random.Random(seed)
        self.ids: list = []
        self.serial = 0
        self.runs: list[tuple[Job, Job]] = []  # the same run, as each queue handed it out
        self.batches: list = []

    def both(self, name: str, *args, mem_args=None):
        """Call `name` on both queues; an error must be the same type on both."""
        answers = []
        for queue, call_args in ((self.db, args), (self.mem, mem_args or args)):
            try:
                answers.append(("ok", getattr(queue, name)(*call_args)))
            except QueueError as exc:
                answers.append(("error", type(exc)))
        assert answers[0][0] == answers[1][0], (name, answers)
        return answers[0][1], answers[1][1]

    def advance(self, delta: timedelta) -> None:
        self.db.clock.advance(delta)
        self.mem.clock.advance(delta)

    def check(self) -> None:
        db_jobs = {job.id: _job_state(job) for job in Job.objects.all()}
        mem_jobs = {job.id: _job_state(job) for job in self.mem.get_all_jobs()}
        assert db_jobs.keys() == mem_jobs.keys()
        for job_id, state in db_jobs.items():
            assert mem_jobs[job_id] == state, job_id
        for queue in QUEUES:
            assert self.db.get_job_counts_by_status(queue) == self.mem.get_job_counts_by_status(
                queue
            )
            assert self.db.is_queue_paused(queue) == self.mem.is_queue_paused(queue)
        for batch in Batch.objects.all():
            assert self.mem.get_batch_status(batch.id) == self.db.get_batch_status(batch.id)
            db_jobs = [job.id for job in self.db.get_batch_jobs(batch.id)]
            assert [job.id for job in self.mem.get_batch_jobs(batch.id)] == db_jobs
        for workflow in Workflow.objects.all():
            mem = self.mem.store.get_group(Workflow, workflow.id)
            assert _group_state(workflow) == _group_state(mem)

    # Operations -------------------------------------------------------------------------
    def new_job(self, **extra) -> Job:
        rng = self.rng
        job = Job(
            queue_name=rng.choice(QUEUES),
            priority=rng.choice(list(JobPriority)),
            max_attempts=rng.randint(1, 3),
            payload={"n": rng.randint(0, 9)},
            **extra,
        )
        # Distinct due times: the order of jobs due at the same instant is the vendor's id
        # order (MariaDB compares its native UUIDs group by group from the end), not a rule.
        self.serial += 1
        job.scheduled_at = job.created_at + timedelta(
            seconds=rng.choice([-30, 0, 0, 20]), microseconds=self.serial
        )
        if rng.random() < 0.3:
            job.retry_strategy = RetryStrategy.fixed(timedelta(seconds=rng.randint(1, 30)))
        if rng.random() < 0.1:
            job.cron_schedule = "*/1 * * * *"
        return job

    def enqueue(self) -> None:
        jobs = [self.new_job() for _ in range(self.rng.randint(1, 3))]
        if self.ids and self.rng.random() < 0.3:
            jobs[-1].depends_on = [str(self.rng.choice(self.ids))]
        self.both("enqueue_many", jobs, mem_args=(copy.deepcopy(jobs),))
        self.ids += [job.id for job in jobs]

    def enqueue_workflow(self) -> None:
        def group(jobs):
            policy = [
                FailurePolicy.FAIL_FAST,
                FailurePolicy.CONTINUE_ON_FAILURE,
                FailurePolicy.MANUAL,
            ][len(self.ids) % 3]
            g = JobGroup("w", failure_policy=policy)
            g.add_job(jobs[0]).add_parallel_jobs(jobs[1:-1]).then(jobs[-1])
            return g

        jobs = [self.new_job(cron_schedule=None) for _ in range(self.rng.randint(2, 4))]
        for job in jobs:
            job.cron_schedule = None
        db_group = group(jobs)
        mem_group = group(copy.deepcopy(jobs))
        mem_group.id = db_group.id
        self.both("enqueue_workflow", db_group, mem_args=(mem_group,))
        self.ids += [job.id for job in jobs]

    def enqueue_batch(self) -> None:
        queue = self.rng.choice(QUEUES)
        jobs = [self.new_job() for _ in range(self.rng.randint(2, 4))]
        for job in jobs:
            job.queue_name, job.cron_schedule = queue, None
        mode = self.rng.choice(list(PartialFailureMode))
        db_batch = JobBatch("b", jobs, partial_failure_mode=mode)
        mem_batch = JobBatch("b", copy.deepcopy(jobs), partial_failure_mode=mode)
        mem_batch.id = db_batch.id
        self.both("enqueue_batch", db_batch, mem_args=(mem_batch,))
        self.ids += [job.id for job in jobs]

    def dequeue(self) -> None:
        options = DequeueOptions.batch(self.rng.randint(0, 4)).with_lease_duration(
            timedelta(seconds=self.rng.choice([10, 60]))
        )
        if self.rng.random() < 0.4:
            options = options.with_priority_weights(PriorityWeights())
        db, mem = self.both("dequeue", self.rng.choice(QUEUES), options)
        assert [job.id for job in db] == [job.id for job in mem]
        assert [_job_state(job) for job in db] == [_job_state(job) for job in mem]
        self.runs += zip(db, mem, strict=True)

    def run_call(self, name: str, *extra) -> None:
        if not self.runs:
            return
        db_run, mem_run = self.rng.choice(self.runs)
        db, mem = self.both(name, db_run, *extra, mem_args=(mem_run, *extra))
        assert db == mem, (name, db, mem)

    def outcome(self) -> JobOutcome:
        return self.rng.choice(
            [
                JobOutcome.completed({"ok": 1}),
                JobOutcome.failed("boom"),
                JobOutcome.retry(T0 + timedelta(seconds=5), "later"),
                JobOutcome.dead("dead"),
                JobOutcome.timed_out(),
                JobOutcome.cancelled("gone"),
            ]
        )

    def finish(self) -> None:
        self.run_call("finish_job_run", self.outcome())

    def finish_many(self) -> None:
        """Several outcomes at once, plain completions among them (a run maybe twice)."""
        if not self.runs:
            return
        picked = self.rng.choices(self.runs, k=self.rng.randint(1, 5))
        outcomes = [
            self.rng.choice([JobOutcome.completed(), JobOutcome.completed(), self.outcome()])
            for _ in picked
        ]
        db, mem = self.both(
            "finish_job_runs",
            [(db, outcome) for (db, _), outcome in zip(picked, outcomes, strict=True)],
            mem_args=(
                [(mem, outcome) for (_, mem), outcome in zip(picked, outcomes, strict=True)],
            ),
        )
        assert db == mem

    def handover(self) -> None:
        """Outcomes and starts in one call, as a worker's slot hands them in."""
        if not self.runs:
            return
        picked = self.rng.choices(self.runs, k=self.rng.randint(0, 3))
        starting = self.rng.choices(self.runs, k=self.rng.randint(1, 2))
        outcomes = [self.rng.choice([JobOutcome.completed(), self.outcome()]) for _ in picked]
        db, mem = self.both(
            "finish_and_start_runs",
            [(db, outcome) for (db, _), outcome in zip(picked, outcomes, strict=True)],
            [db for db, _ in starting],
            mem_args=(
                [(mem, outcome) for (_, mem), outcome in zip(picked, outcomes, strict=True)],
                [mem for _, mem in starting],
            ),
        )
        assert db == mem

    def operator(self) -> None:
        if not self.ids:
            return
        name = self.rng.choice(
            [
                "retry_job",
                "cancel_job",
                "mark_job_dead",
                "delete_job",
                "enable_recurring_job",
                "disable_recurring_job",
            ]
        )
        job_id = self.rng.choice(self.ids)
        if name == "retry_job" and self.rng.random() < 0.5:
            self.both(name, job_id, self.db.now() + timedelta(seconds=self.rng.randint(-5, 60)))
        else:
            self.both(name, job_id)

    def reap(self) -> None:
        """The reaper, after every held run got a lease of its own length. The database
        takes leases that expire at the same instant (a batch's) in no set order, and in a
        fail-fast batch or workflow the order decides which sibling fails the other."""
        base = timedelta(seconds=self.rng.choice([1, 30, 120]))
        for n, (db_run, mem_run) in enumerate(self.runs):
            lease = base + timedelta(microseconds=n)
            assert self.db.heartbeat_job(db_run, lease) == self.mem.heartbeat_job(mem_run, lease)
        self.advance(timedelta(seconds=self.rng.choice([0, 10, 60])))
        db, mem = self.both("requeue_stale_jobs")
        assert (db.requeued, db.dead) == (mem.requeued, mem.dead)

    def step(self) -> None:
        rng = self.rng
        weights = {
            "enqueue": 4, "workflow": 2, "batch": 2, "dequeue": 6, "finish": 5,
            "finish_many": 2, "release": 1, "heartbeat": 1, "heartbeat_many": 1, "start": 2,
            "handover": 2,
            "advance": 3, "reap": 1, "pause": 1, "operator": 3, "refused": 1,
        }  # fmt: skip
        choice = rng.choices(list(weights), weights=list(weights.values()))[0]
        if choice == "enqueue":
            self.enqueue()
        elif choice == "workflow":
            self.enqueue_workflow()
        elif choice == "batch":
            self.enqueue_batch()
        elif choice == "dequeue":
            self.dequeue()
        elif choice == "finish":
            self.finish()
        elif choice == "handover":
            self.handover()
        elif choice == "release":
            self.run_call("release_job_run")
        elif choice == "heartbeat":
            self.run_call("heartbeat_job", timedelta(seconds=30))
        elif choice == "heartbeat_many":
            runs = rng.sample(self.runs, min(len(self.runs), 4))
            db, mem = self.both(
                "heartbeat_jobs",
                [db for db, _ in runs],
                timedelta(seconds=40),
                mem_args=([mem for _, mem in runs], timedelta(seconds=40)),
            )
            assert db == mem
        elif choice == "finish_many":
            self.finish_many()
        elif choice == "refused":
            jobs = [self.new_job(), Job(queue_name="a", max_attempts=0)]
            self.both("enqueue_many", jobs, mem_args=(copy.deepcopy(jobs),))
        elif choice == "start":
            self.run_call("start_claimed_run")
        elif choice == "advance":
            self.advance(timedelta(seconds=rng.choice([1, 15, 45, 90])))
        elif choice == "reap":
            self.reap()
        elif choice == "pause":
            queue = rng.choice(QUEUES)
            if self.db.is_queue_paused(queue):
                self.both("resume_queue", queue)
            else:
                self.both("pause_queue", queue)
        else:
            self.operator()


SEEDS = int(os.environ.get("HAMMERWEB_PARITY_SEEDS", "3"))
STEPS = int(os.environ.get("HAMMERWEB_PARITY_STEPS", "80"))


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(SEEDS))
def test_testqueue_answers_as_the_database_queue(seed):
    twins = Twins(seed)
    for _ in range(STEPS):
        twins.step()
        twins.check()
