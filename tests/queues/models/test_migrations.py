"""A database made by the release's migrations (up to RELEASE), with jobs, a batch, a
workflow, tags and an error history in it, migrated to the latest: the current models read
its rows, and a queue claims and finishes its jobs with the tallies, the dependencies and
the trigger-kept counts right. The test database is migrated to the latest afterwards,
whether or not the test passes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Sum
from django.utils import timezone

from queues.api import BatchStatus, JobOutcome, JobQueue, WorkflowStatus
from queues.models import AttemptCount, Batch, CompletionCount, FailedAttempt, Job, Workflow
from tests.conftest import unique_queue

RELEASE = ("queues", "0018_pages_history_sample_index")

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(target: tuple[str, str | None]) -> None:
    # The executor, not the `migrate` command: after a migration to zero the command's
    # post_migrate handlers would read tables that are gone.
    MigrationExecutor(connection).migrate([target])


@pytest.fixture
def release_apps():
    """The app registry of RELEASE, on a database whose `queues` tables were dropped and
    built again by the migrations up to RELEASE."""
    try:
        _migrate(("queues", None))
        _migrate(RELEASE)
        yield MigrationExecutor(connection).loader.project_state(RELEASE).apps
    finally:
        call_command("migrate", verbosity=0)


def _counted(model, queue: str) -> int:
    return model.objects.filter(queue_name=queue).aggregate(n=Sum("n"))["n"] or 0


def test_a_database_of_the_release_with_jobs_migrates_and_its_jobs_run(release_apps):
    names = ("Batch", "Workflow", "Job", "JobDependency", "JobTag", "FailedAttempt")
    old = {name: release_apps.get_model("queues", name) for name in names}
    queue, flow_queue = unique_queue("mig"), unique_queue("mig_flow")
    now = timezone.now()
    earlier = now - timedelta(minutes=5)

    batch = old["Batch"].objects.create(
        name="release batch",
        status="Processing",
        total_jobs=2,
        completed_jobs=1,
        metadata={"campaign": "r1"},
    )
    old["Job"].objects.create(
        queue_name=queue,
        batch=batch,
        status="Completed",
        attempts=1,
        created_at=earlier,
        scheduled_at=earlier,
        started_at=earlier,
        completed_at=now,
        result={"sent": 3},
    )
    pending = old["Job"].objects.create(
        queue_name=queue,
        batch=batch,
        payload={"to": "a@example.com"},
        priority=3,
        tags=["eu"],
        meta={"source": "release"},
        created_at=earlier,
        scheduled_at=earlier,
    )
    old["JobTag"].objects.create(
        job=pending, tag="eu", queue_name=queue, created_at=earlier, priority=3
    )
    dead = old["Job"].objects.create(
        queue_name=queue, status="Dead", attempts=3, failed_at=now, error_message="boom"
    )
    old["FailedAttempt"].objects.create(
        job=dead,
        attempt=3,
        failed_at=now,
        ended_by="error",
        status="Dead",
        error="boom",
        exception_class="ValueError",
        worker="host:1",
    )
    workflow = old["Workflow"].objects.create(name="release workflow", total_jobs=2)
    parent = old["Job"].objects.create(
        queue_name=flow_queue, workflow=workflow, created_at=earlier, scheduled_at=earlier
    )
    child = old["Job"].objects.create(
        queue_name=flow_queue,
        workflow=workflow,
        depends_on=[str(parent.id)],
        dependency_status="waiting",
        created_at=earlier,
        scheduled_at=earlier,
    )
    old["JobDependency"].objects.create(job=child, parent=parent)

    call_command("migrate", verbosity=0)

    # The current models read the release's rows.
    row = Job.objects.get(pk=pending.pk)
    assert (row.payload, row.tags, row.meta, row.priority) == (
        {"to": "a@example.com"},
        ["eu"],
        {"source": "release"},
        3,
    )
    assert Batch.objects.get(pk=batch.pk).pending_jobs == 1
    attempt = FailedAttempt.objects.get(job_id=dead.pk)
    assert (attempt.error, attempt.exception_class) == ("boom", "ValueError")
    edges = Job.objects.get(pk=child.pk).dependency_edges
    assert list(edges.values_list("parent_id", flat=True)) == [parent.pk]

    engine = JobQueue()
    counts = engine.get_job_counts_by_status(queue)
    assert (counts["Pending"], counts["Completed"], counts["Dead"]) == (1, 1, 1)
    assert [job.id for job in engine.get_tagged_jobs("eu", queue)] == [pending.pk]
    assert [a.error for a in engine.get_job_attempts(dead.pk)] == ["boom"]
    assert _counted(AttemptCount, queue) == 1

    # The batch's last job runs: the batch completes.
    claimed = engine.dequeue_one(queue)
    assert claimed is not None and claimed.id == pending.pk
    assert claimed.payload == {"to": "a@example.com"} and claimed.meta == {"source": "release"}
    engine.finish_job_run(claimed, JobOutcome.completed({"sent": 1}))
    status = engine.get_batch_status(batch.pk)
    assert (status.status, status.completed_jobs, status.pending_jobs) == (
        BatchStatus.COMPLETED,
        2,
        0,
    )
    counts = engine.get_job_counts_by_status(queue)
    assert (counts["Pending"], counts["Running"], counts["Completed"]) == (0, 0, 2)
    assert _counted(CompletionCount, queue) == 2

    # The workflow's child waits for its parent, along the release's edge.
    first = engine.dequeue_one(flow_queue)
    assert first is not None and first.id == parent.pk
    assert engine.dequeue_one(flow_queue) is None
    engine.finish_job_run(first, JobOutcome.completed())
    second = engine.dequeue_one(flow_queue)
    assert second is not None and second.id == child.pk
    engine.finish_job_run(second, JobOutcome.completed())
    done = Workflow.objects.get(pk=workflow.pk)
    assert (done.status, done.completed_jobs, done.pending_jobs) == (WorkflowStatus.COMPLETED, 2, 0)
    assert engine.get_job_counts_by_status(flow_queue)["Completed"] == 2


def test_the_models_match_the_migrations():
    """No change a migration would have to make: the tables are the migrations' tables."""
    call_command("makemigrations", "queues", check=True, dry_run=True, verbosity=0)
