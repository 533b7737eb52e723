"""The outcomes of jobs of batches, workflows and schedules are written with their claim's
(`effects.record_all`): each group row locked and written once per claim, the dependents of
all its completed jobs released together. What they write must be what the same outcomes
write one by one (`finish_job_run` in the claim's order), on every store; the statements of
a claim do not grow with its jobs; concurrent writers keep the tallies exact."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.api import (
    BatchStatus,
    DependencyStatus,
    DequeueOptions,
    FailurePolicy,
    Job,
    JobBatch,
    JobGroup,
    JobOutcome,
    JobStatus,
    PartialFailureMode,
)
from queues.models import Batch, Workflow
from tests.queues.conftest import unique_queue
from tests.queues.engine.test_concurrency import in_threads
from tests.queues.test_signals import fixed, recorder_for
from tests.signal_events import connected

JOB_FIELDS = (
    "status", "dependency_status", "attempts", "error_message", "result", "scheduled_at",
    "next_run_at", "completed_at", "failed_at", "timed_out_at", "run_token",
)  # fmt: skip
GROUP_FIELDS = ("status", "total_jobs", "completed_jobs", "failed_jobs", "completed_at")
WORKFLOW_FIELDS = (*GROUP_FIELDS, "failed_at")


def job(name: str, key: str, later: bool = False, **fields) -> Job:
    """A job of key `key`; `later`: due in an hour (the queue's clock rebases the delay)."""
    made = Job(queue_name=name, payload={"k": key}, retry_strategy=fixed(30), **fields)
    if later:
        made.scheduled_at = made.created_at + timedelta(hours=1)
    return made


def scenario(queue, name: str):
    """Every group shape in one queue: (groups, each job's outcome by key). The jobs left
    out of the claim are scheduled later (the cascades reach them); the recurring jobs are
    due once the clock is moved to their next slot (`claim`)."""
    mixed = JobBatch("mixed", [job(name, f"m{i}", max_attempts=2) for i in range(5)])
    fast = JobBatch(
        "fast",
        [job(name, f"f{i}", max_attempts=1) for i in range(3)]
        + [job(name, f"f{i}", later=True) for i in range(3, 5)]
        + [job(name, key, max_attempts=2) for key in ("f_back_before", "f_back_after")],
        partial_failure_mode=PartialFailureMode.FAIL_FAST,
    )
    ending = JobBatch(  # its last jobs finish in the claim, one of them fails it
        "ending",
        [job(name, f"e{i}", max_attempts=1) for i in range(3)],
        partial_failure_mode=PartialFailureMode.FAIL_FAST,
    )
    done = JobBatch("done", [job(name, f"d{i}") for i in range(3)])
    p1, p2, p3 = (job(name, f"p{i}", max_attempts=1) for i in (1, 2, 3))
    flow = JobGroup("flow", FailurePolicy.CONTINUE_ON_FAILURE).add_parallel_jobs([p1, p2, p3])
    only_p1, p1_and_p3, only_p2 = job(name, "c1"), job(name, "c13"), job(name, "c2")
    only_p1.depends_on_job(p1)
    p1_and_p3.depends_on_job(p1).depends_on_job(p3)
    only_p2.depends_on_job(p2)
    grandchild = job(name, "g2").depends_on_job(only_p2)
    flow.add_parallel_jobs([only_p1, p1_and_p3, only_p2, grandchild])
    x, y = job(name, "x", max_attempts=1), job(name, "y", max_attempts=1)
    strict = JobGroup("strict", FailurePolicy.FAIL_FAST).add_parallel_jobs([x, y])
    strict.add_job(job(name, "z").depends_on_job(x)).add_job(job(name, "w", later=True))
    x2, y2 = job(name, "x2", max_attempts=1), job(name, "y2", max_attempts=1)
    strict2 = JobGroup("strict2", FailurePolicy.FAIL_FAST).add_parallel_jobs([x2, y2])
    strict2.add_job(job(name, "z2").depends_on_job(x2))
    groups = {
        "mixed": (Batch, queue.enqueue_batch(mixed)),
        "fast": (Batch, queue.enqueue_batch(fast)),
        "ending": (Batch, queue.enqueue_batch(ending)),
        "done": (Batch, queue.enqueue_batch(done)),
        "flow": (Workflow, queue.enqueue_workflow(flow)),
        "strict": (Workflow, queue.enqueue_workflow(strict)),
        "strict2": (Workflow, queue.enqueue_workflow(strict2)),
    }
    queue.enqueue(job(name, "cron_ok", cron_schedule="0 */5 * * * *"))
    queue.enqueue(job(name, "cron_bad", cron_schedule="0 */5 * * * *", max_attempts=1))
    queue.enqueue(job(name, "single"))
    now = queue.now()
    outcomes = {
        "m0": JobOutcome.completed(),
        "m1": JobOutcome.completed({"n": 1}),
        "m2": JobOutcome.failed("retried"),  # attempts left: Pending again
        "m3": JobOutcome.dead("gave up"),
        "m4": JobOutcome.retry(now + timedelta(minutes=5), error="later"),
        "f0": JobOutcome.completed(),
        "f_back_before": JobOutcome.retry(now),  # Pending again: the failure fails it
        "f1": JobOutcome.failed("boom"),  # fails f3 and f4, still Pending
        "f2": JobOutcome.completed(),  # a completion after the failure, same claim
        "f_back_after": JobOutcome.failed("again"),  # Pending after the failure: stays
        "e0": JobOutcome.completed(),
        "e1": JobOutcome.failed("last ones"),
        "e2": JobOutcome.completed(),
        "d0": JobOutcome.completed(),
        "d1": JobOutcome.completed(),
        "d2": JobOutcome.completed(),
        "p1": JobOutcome.completed(),
        "p3": JobOutcome.completed({"p": 3}),  # with p1: releases c13
        "p2": JobOutcome.timed_out(),  # no attempts left: fails c2 and g2
        "x": JobOutcome.completed(),  # releases z, which y's fail-fast then fails
        "y": JobOutcome.dead("strict"),
        "y2": JobOutcome.dead("strict first"),  # fails z2 before x2 would release it
        "x2": JobOutcome.completed(),
        "cron_ok": JobOutcome.completed(),
        "cron_bad": JobOutcome.failed("cron run failed"),
        "single": JobOutcome.completed(),
    }
    return groups, outcomes


def claim(queue, name: str, outcomes):
    """The claim of every due job of `name`, each with its outcome, in the outcomes' order."""
    claimed = queue.dequeue(name, DequeueOptions.batch(100))
    by_key = {claimed_job.payload["k"]: claimed_job for claimed_job in claimed}
    assert sorted(by_key) == sorted(outcomes)
    return [(by_key[key], outcome) for key, outcome in outcomes.items()]


def state(queue, name: str, groups, answers):
    """What is stored and answered, with every job id replaced by its key."""
    keys = {}
    jobs = {}
    for stored in queue.store.find_jobs(_match(name)):
        keys[str(stored.id)] = stored.payload["k"]
        jobs[stored.payload["k"]] = stored

    def named(value):
        if isinstance(value, str):
            return re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", lambda m: keys.get(m[0], "?"), value)
        return value

    rows = {key: {f: named(getattr(j, f)) for f in JOB_FIELDS} for key, j in jobs.items()}
    for key, (model, group_id) in groups.items():
        fields = WORKFLOW_FIELDS if model is Workflow else GROUP_FIELDS
        row = queue.store.get_group(model, group_id)
        rows[key] = {f: getattr(row, f) for f in fields}
    told = [
        (
            answer.status,
            answer.next_run_at,
            sorted(keys[str(i)] for i in answer.unblocked),
            sorted(keys[str(i)] for i in answer.cancelled),
        )
        for answer in answers
    ]
    return rows, told


def _match(name):
    from queues.store.base import Match

    return Match(queue_name=name)


def test_a_claims_group_outcomes_write_what_they_write_one_by_one(queue):
    together, alone = unique_queue("group_claim"), unique_queue("group_alone")
    groups, outcomes = scenario(queue, together)
    groups_alone, _ = scenario(queue, alone)
    queue.clock.advance(timedelta(minutes=5))  # the recurring jobs' first slot
    finished = claim(queue, together, outcomes)
    answers = queue.finish_job_runs(finished)
    answers_alone = [queue.finish_job_run(j, o) for j, o in claim(queue, alone, outcomes)]
    rows, told = state(queue, together, groups, answers)
    rows_alone, told_alone = state(queue, alone, groups_alone, answers_alone)
    assert rows.keys() == rows_alone.keys()
    for key, row in rows.items():
        for field, value in row.items():
            assert (key, field, value) == (key, field, rows_alone[key][field])
    assert told == told_alone
    # What the rules give, for the record.
    assert rows["mixed"]["status"] == BatchStatus.PROCESSING
    assert (rows["fast"]["status"], rows["fast"]["failed_jobs"]) == (BatchStatus.FAILED, 4)
    assert rows["f3"]["error_message"] == rows["f4"]["error_message"]
    assert rows["f3"]["error_message"] == "Batch failed: job f1 failed (fail-fast mode)"
    assert rows["ending"]["status"] == BatchStatus.FAILED and rows["ending"]["completed_at"]
    assert rows["done"]["status"] == BatchStatus.COMPLETED
    assert rows["c13"]["dependency_status"] == DependencyStatus.SATISFIED
    assert rows["g2"]["status"] == rows["c2"]["status"] == JobStatus.FAILED
    assert rows["z"]["status"] == rows["w"]["status"] == JobStatus.FAILED
    assert rows["cron_ok"]["status"] == rows["cron_bad"]["status"] == JobStatus.PENDING
    keys = [j.payload["k"] for j, _ in finished]
    assert told[keys.index("x")][2] == ["z"] and told[keys.index("x2")][2] == []
    assert rows["f_back_before"]["status"] == JobStatus.FAILED
    assert rows["f_back_after"]["status"] == JobStatus.PENDING


def batch_claim(queue, size: int):
    name = unique_queue("group_count")
    jobs = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(size)]
    queue.enqueue_batch(JobBatch("count", jobs))
    claimed = queue.dequeue(name, DequeueOptions.batch(size))
    assert len(claimed) == size
    return claimed


def outcome_of(i: int) -> JobOutcome:
    return [JobOutcome.completed(), JobOutcome.completed({"i": i}), JobOutcome.dead("x")][i % 3]


@pytest.mark.parametrize("mixed", [False, True], ids=["completions", "mixed"])
def test_the_statements_of_a_batch_claim_do_not_grow_with_its_jobs(db_queue, mixed):
    counts = []
    for size in (5, 50):
        claimed = batch_claim(db_queue, size)
        finished = [(j, outcome_of(i) if mixed else JobOutcome.completed())
                    for i, j in enumerate(claimed)]  # fmt: skip
        with CaptureQueriesContext(connection) as queries:
            db_queue.finish_job_runs(finished)
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_a_workflow_claims_statements_do_not_grow_with_its_jobs(db_queue):
    counts = []
    for size in (5, 50):
        name = unique_queue("group_flow_count")
        parents = [Job(queue_name=name, payload={"i": i}) for i in range(size)]
        flow = JobGroup("count").add_parallel_jobs(parents)
        for parent in parents:  # each parent has a child of its own
            flow.add_job(Job(queue_name=name, payload={"child": 1}).depends_on_job(parent))
        db_queue.enqueue_workflow(flow)
        claimed = db_queue.dequeue(name, DequeueOptions.batch(size))
        assert {j.id for j in claimed} == {p.id for p in parents}
        with CaptureQueriesContext(connection) as queries:
            answers = db_queue.finish_job_runs([(j, JobOutcome.completed()) for j in claimed])
        assert all(len(answer.unblocked) == 1 for answer in answers)
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


@pytest.mark.parametrize("failures", [False, True], ids=["completions", "with_failures"])
def test_two_workers_finishing_one_batch_at_once_keep_its_tallies(db_queue, failures):
    for _ in range(3):
        name = unique_queue("group_race")
        jobs = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(60)]
        batch_id = db_queue.enqueue_batch(JobBatch("race", jobs))
        claims = [db_queue.dequeue(name, DequeueOptions.batch(30)) for _ in range(2)]
        assert sorted(len(c) for c in claims) == [30, 30]
        outcome = outcome_of if failures else (lambda i: JobOutcome.completed())
        recorder = recorder_for(db_queue)
        with connected(recorder):
            in_threads([
                lambda c=c, o=outcome: db_queue.finish_job_runs([(j, o(j.payload["i"])) for j in c])
                for c in claims
            ])  # fmt: skip
        status = db_queue.get_batch_status(batch_id)
        counts = db_queue.get_job_counts_by_status(name)
        assert status.completed_jobs == counts[JobStatus.COMPLETED] == (40 if failures else 60)
        assert status.failed_jobs == counts[JobStatus.DEAD] == (20 if failures else 0)
        assert status.pending_jobs == 0 and status.completed_at is not None
        assert status.status == (
            BatchStatus.PARTIALLY_FAILED if failures else BatchStatus.COMPLETED
        )
        ends = [e for e in recorder.events if e.name in ("job_succeeded", "job_failed")]
        assert sorted(str(e["job_id"]) for e in ends) == sorted(str(j.id) for j in jobs)


def held_of_a_failed_batch(queue, size: int):
    """`size` held jobs of a fail-fast batch that another job of the claim failed."""
    name = unique_queue("group_held")
    jobs = [Job(queue_name=name, payload={"i": i}, max_attempts=1) for i in range(size + 1)]
    batch_id = queue.enqueue_batch(JobBatch("held", jobs, PartialFailureMode.FAIL_FAST))
    first, *held = queue.dequeue(name, DequeueOptions.batch(size + 1))
    assert queue.finish_job_run(first, JobOutcome.failed("first")).status == JobStatus.DEAD
    return batch_id, first, held


def test_held_jobs_of_a_failed_batch_are_failed_together_at_their_start(queue):
    batch_id, first, held = held_of_a_failed_batch(queue, 4)
    _, answers = queue.finish_and_start_runs([], held)
    assert answers == ["cancelled"] * 4
    for job in held:
        stored = queue.get_job(job.id)
        assert stored.status == JobStatus.FAILED and stored.run_token is None
        assert stored.error_message == f"Batch failed: job {first.id} failed (fail-fast mode)"
    status = queue.get_batch_status(batch_id)
    assert (status.status, status.failed_jobs, status.pending_jobs) == (BatchStatus.FAILED, 5, 0)


def test_the_statements_of_failing_held_jobs_do_not_grow_with_them(db_queue):
    counts = []
    for size in (3, 30):
        _, _, held = held_of_a_failed_batch(db_queue, size)
        with CaptureQueriesContext(connection) as queries:
            _, answers = db_queue.finish_and_start_runs([], held)
        assert answers == ["cancelled"] * size
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
