"""A mix of jobs in every state an operator meets, built twice alike, and a snapshot of what
the engine left of them: the comparison of `retry_jobs` / `cancel_jobs` with the single
methods called one by one (`tests/queues/engine/test_operators.py`), written once."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta
from uuid import UUID, uuid4

from queues import signals
from queues.api import Job, JobBatch, JobGroup, JobOutcome
from queues.enums import FailurePolicy, PartialFailureMode
from queues.exceptions import QueueError
from queues.models import Batch, Workflow
from queues.options import DequeueOptions
from tests.queues.conftest import unique_queue

#: The labels of the mix, in the order of their ids (each copy gets ids sorted alike, so the
#: engine's id order is the same in both).
LABELS = (
    "pending",
    "scheduled",
    "running",
    "failed",
    "dead",
    "completed",
    "unique_taken",
    "in_batch",
    "wf_parent",
    "wf_child",
    "child_of_dead",
    "recurring",
)


class Mix:
    """One copy of the mix in its own queue: `ids` by label, the live `run` of the Running
    job (its worker finishes it after the operator's action), the groups' ids."""

    def __init__(self, queue) -> None:
        self.queue = queue
        self.name = unique_queue("opmix")
        ids = sorted((uuid4() for _ in LABELS), key=str)
        self.ids: dict[str, UUID] = dict(zip(LABELS, ids, strict=True))
        self.labels = {job_id: label for label, job_id in self.ids.items()}
        self._build()

    def job(self, label: str, later: timedelta | None = None, **fields) -> Job:
        job = Job(id=self.ids[label], queue_name=self.name, payload={"label": label}, **fields)
        return _later(job, later)

    def _finish(self, job: Job, outcome) -> None:
        self.queue.enqueue(job)
        (run,) = self.queue.dequeue(self.name)
        self.queue.finish_job_run(run, outcome)

    def _build(self) -> None:
        q = self.queue
        late = timedelta(days=1)  # unclaimed while the mix is built
        dead = self.job("dead")
        self._finish(dead, JobOutcome.dead("broke"))
        self._finish(self.job("completed"), JobOutcome.completed({"n": 1}))
        self._finish(self.job("failed", max_attempts=1), JobOutcome.dead("failed for good"))
        q.enqueue(self.job("unique_taken", unique_key="k"))
        q.mark_job_dead(self.ids["unique_taken"])
        q.enqueue(_later(Job(queue_name=self.name, unique_key="k"), late))
        q.enqueue(self.job("running"))
        (self.run,) = q.dequeue(self.name)
        q.enqueue(self.job("pending"))
        q.enqueue(self.job("scheduled", timedelta(hours=1)))
        other = _later(Job(queue_name=self.name), late)
        batch = JobBatch("b", [self.job("in_batch", late), other])
        batch.partial_failure_mode = PartialFailureMode.FAIL_FAST
        self.batch_id = q.enqueue_batch(batch)
        parent, child = self.job("wf_parent", late), self.job("wf_child")
        group = JobGroup("wf", failure_policy=FailurePolicy.CONTINUE_ON_FAILURE)
        self.workflow_id = q.enqueue_workflow(group.add_job(parent).then(child))
        q.enqueue(self.job("child_of_dead").depends_on_job(dead))
        q.enqueue(self.job("recurring", late, cron_schedule="0 * * * * *"))

    def named(self, text: str | None) -> str | None:
        """`text` with the mix's ids replaced by their labels (the copies' ids differ)."""
        for job_id, label in self.labels.items():
            text = text and text.replace(str(job_id), label)
        return text

    def snapshot(self) -> dict:
        """What the engine left, ids by label: rows, history, counts, group tallies."""
        q = self.queue
        jobs = {}
        for label, job_id in self.ids.items():
            job = q.get_job(job_id)
            jobs[label] = (
                job.status, job.attempts, job.scheduled_at, self.named(job.error_message),
                job.failed_at,
                job.dependency_status, job.unique_slot is not None, job.run_token is None,
                job.recurring,
            )  # fmt: skip
            jobs[label, "history"] = [
                (row.attempt, row.ended_by, row.status, self.named(row.error))
                for row in q.get_job_attempts(job_id)
            ]
        batch = q.store.get_group(Batch, self.batch_id)
        workflow = q.store.get_group(Workflow, self.workflow_id)
        return {
            "jobs": jobs,
            "counts": q.get_job_counts_by_status(self.name),
            "batch": _tallies(batch),
            "workflow": _tallies(workflow),
        }

    def finish_the_run(self):
        """The worker of the Running job ends its handler: recorded only if still its run."""
        return self.queue.finish_job_run(self.run, JobOutcome.completed({"late": True}))


def _later(job: Job, delay: timedelta | None) -> Job:
    """`job` due `delay` after it is enqueued (a queue on a moved clock keeps the delay)."""
    if delay is not None:
        job.scheduled_at = job.created_at + delay
    return job


def _tallies(group) -> tuple:
    return (group.status, group.total_jobs, group.completed_jobs, group.failed_jobs)


@contextmanager
def heard(labels_of: Callable[[UUID], str | None], named: Callable[[str], str]):
    """The operator signals sent, as (signal, label, attempt, error) sorted: a list filled
    as they are sent."""
    events: list = []

    def receiver(signal, sender, **arguments) -> None:
        label = labels_of(arguments["job_id"])
        error = arguments.get("error")
        events.append((signal.name, label, arguments["attempt"], error and named(error)))

    which = (signals.job_cancelled, signals.job_retried, signals.job_dead)
    for signal in which:
        signal.connect(receiver, weak=False)
    try:
        yield events
    finally:
        for signal in which:
            signal.disconnect(receiver)
        events.sort(key=repr)


def one_by_one(mix: Mix, method: str, **told) -> None:
    for label in LABELS:
        try:
            getattr(mix.queue, method)(mix.ids[label], **told)
        except QueueError:
            pass


def compare(queue, single: str, many: str, **told) -> tuple[dict, object]:
    """Build the mix twice; act on one copy with `single` per job (in id order), on the
    other with `many` at once; assert they end alike (rows, history, counts, tallies,
    signals, and the fenced run's late outcome discarded). The batch call's answer."""
    first, second = Mix(queue), Mix(queue)
    with heard(first.labels.get, first.named) as singles:
        one_by_one(first, single, **told)
    with heard(second.labels.get, second.named) as together:
        result = getattr(queue, many)(list(second.ids.values()), **told)
    _same(first.snapshot(), second.snapshot())
    assert singles == together, (singles, together)
    assert first.finish_the_run() is None and second.finish_the_run() is None
    _same(first.snapshot(), second.snapshot())
    return first.snapshot(), result, second


def _same(one: dict, other: dict) -> None:
    """Equal, or an error that names what differs."""
    differ = {
        key: (one["jobs"][key], other["jobs"][key])
        for key in one["jobs"]
        if one["jobs"][key] != other["jobs"][key]
    }
    rest = {key: (one[key], other[key]) for key in one if key != "jobs" and one[key] != other[key]}
    assert not differ and not rest, (differ, rest)


def claim_all(queue, name: str) -> list:
    return queue.dequeue(name, DequeueOptions(batch_size=100))
