"""`manage.py jobs purge --older-than`: jobs that finished before then are deleted through
the engine, a page of ids per transaction (counted here), groups whole; what has not
finished, finished later, is recurring or sits in an unfinished group is kept; `--dry-run`
changes nothing."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues.api import Job, JobBatch, JobGroup, JobOutcome, JobQueue, JobStatus
from queues.models import Batch, Workflow
from queues.models import Job as Row
from queues.options import DequeueOptions
from tests.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished, jobs, queue_days_ago, snapshot

pytestmark = pytest.mark.django_db

DELETE_JOBS = re.compile(r'^DELETE FROM [`"]?queues_job[`"]? WHERE', re.IGNORECASE)


def test_purge_deletes_what_finished_before_the_age_and_keeps_the_rest():
    name = unique_queue("cli_purge")
    old = queue_days_ago(10)
    gone = finished(old, name, 3) + finished(old, name, 2, JobOutcome.dead("no"))
    recent = finished(queue_days_ago(1), name, 2)
    old.enqueue(Job(queue_name=name))  # old but Pending
    old.enqueue(Job(queue_name=name))
    running = old.dequeue_one(name)  # old but Running
    old.enqueue(Job(queue_name=name, cron_schedule="0 3 * * *"))  # a schedule's row
    kept_before = Row.objects.filter(queue_name=name).count() - len(gone)

    out, _ = jobs("purge", "--older-than", "7d", "--dry-run")
    assert "5 jobs that finished before" in out.splitlines()[0]
    assert Row.objects.filter(queue_name=name).count() == kept_before + len(gone)

    out, _ = jobs("purge", "--older-than", "7d", "--queue", name, "--yes")
    assert out.splitlines()[-1] == "deleted 5 jobs"
    left = set(Row.objects.filter(queue_name=name).values_list("id", flat=True))
    assert len(left) == kept_before and not left & set(gone)
    assert set(recent) <= left and running.id in left


def test_purge_narrowed_by_status():
    name = unique_queue("cli_purge_st")
    old = queue_days_ago(10)
    completed = finished(old, name, 2)
    dead = finished(old, name, 2, JobOutcome.dead("no"))
    jobs("purge", "--older-than", "1d", "--queue", name, "--status", "dead", "--yes")
    left = set(Row.objects.filter(queue_name=name).values_list("id", flat=True))
    assert left == set(completed) and not left & set(dead)


def test_a_dry_run_changes_no_row():
    name = unique_queue("cli_purge_dry")
    finished(queue_days_ago(10), name, 4, JobOutcome.dead("no"))
    old = queue_days_ago(10)
    batch = [Job(queue_name=name) for _ in range(2)]
    old.enqueue_batch(JobBatch("done", jobs=batch))
    old.finish_job_runs(
        [(r, JobOutcome.completed()) for r in old.dequeue(name, DequeueOptions(batch_size=2))]
    )
    before = snapshot()
    out, _ = jobs("purge", "--older-than", "1d", "--dry-run")
    assert "1 batches and workflows with their 2 jobs" in out
    assert out.splitlines()[-1] == "dry run: nothing deleted"
    assert snapshot() == before


def test_purge_deletes_a_page_per_transaction(settings):
    name = unique_queue("cli_purge_pages")
    finished(queue_days_ago(10), name, 250)
    with CaptureQueriesContext(connection) as seen:
        out, err = jobs(
            "purge", "--older-than", "1d", "--queue", name, "--batch-size", "100", "--yes"
        )
    assert out.splitlines()[-1] == "deleted 250 jobs"
    deletes = [q["sql"] for q in seen.captured_queries if DELETE_JOBS.match(q["sql"])]
    assert len(deletes) == 3  # 100, 100, 50
    # Each page is one transaction of the engine (a savepoint inside the test's own).
    savepoints = [q for q in seen.captured_queries if q["sql"].startswith("SAVEPOINT")]
    assert len(savepoints) == 3
    assert not Row.objects.filter(queue_name=name).exists()


def test_groups_are_purged_whole_once_every_job_finished():
    name = unique_queue("cli_purge_groups")
    old = queue_days_ago(10)
    done, open_ = [Job(queue_name=name) for _ in range(2)], [Job(queue_name=name) for _ in range(2)]
    done_id = old.enqueue_batch(JobBatch("done", jobs=done))
    open_id = old.enqueue_batch(JobBatch("open", jobs=open_))
    a, b = Job(queue_name=name), Job(queue_name=name)
    flow_id = old.enqueue_workflow(JobGroup("flow").add_parallel_jobs([a]).then(b))
    retried = False
    while runs := old.dequeue(name, DequeueOptions(batch_size=10)):
        # The open batch keeps one job unfinished (claimed, then retried: Pending again).
        old.finish_job_runs([(r, JobOutcome.completed()) for r in runs if r.id != open_[0].id])
        if not retried and any(r.id == open_[0].id for r in runs):
            old.retry_job(open_[0].id, at=old.now() + timedelta(days=30))
            retried = True
    assert retried and JobQueue().get_job(b.id).status == JobStatus.COMPLETED
    finished_before = Row.objects.filter(queue_name=name).count()

    out, _ = jobs("purge", "--older-than", "1d", "--yes")
    assert "2 batches and workflows" in out.splitlines()[-1]
    assert not Batch.objects.filter(id=done_id).exists()
    assert not Workflow.objects.filter(id=flow_id).exists()
    assert Batch.objects.filter(id=open_id).exists()
    assert Row.objects.filter(queue_name=name).count() == finished_before - 4
    assert JobQueue().get_batch_status(open_id).total_jobs == 2


def test_purge_needs_yes_and_a_known_status():
    name = unique_queue("cli_purge_yes")
    finished(queue_days_ago(10), name, 2)
    before = snapshot()
    with pytest.raises(CommandError, match="add --yes"):
        jobs("purge", "--older-than", "1d", "--queue", name)
    with pytest.raises(CommandError, match="unknown status"):
        jobs("purge", "--older-than", "1d", "--status", "Gone", "--yes")
    assert snapshot() == before
    assert JobStatus.COMPLETED in set(Row.objects.values_list("status", flat=True))


@pytest.mark.parametrize("age", ["999999999w", "900000000d900000000d", "0d", "5y"])
def test_an_age_beyond_reach_or_malformed_is_a_command_error_and_changes_nothing(age):
    name = unique_queue("cli_purge_age")
    finished(queue_days_ago(10), name, 2)
    before = snapshot()
    with pytest.raises(CommandError, match="--older-than"):
        jobs("purge", "--older-than", age, "--queue", name, "--yes")
    with pytest.raises(CommandError, match="--older-than"):
        jobs("archive", "--older-than", age, "--queue", name)
    assert snapshot() == before
