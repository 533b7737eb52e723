"""The SQL store's archive on the database of this run: the trigger-kept counters stay exact
through an archive and a restore, and two archivers at once lose and repeat no job."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Sum

from queues.api import Job, JobGroup, JobOutcome, JobQueue, MockClock
from queues.models import (
    ArchivedJob,
    AttemptCount,
    CompletionCount,
    FailedAttempt,
    JobCount,
    JobDependency,
    JobTag,
)
from queues.models import Job as JobRow
from queues.options import DequeueOptions
from tests.queues.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished

pytestmark = pytest.mark.django_db(transaction=True)
WEEK = timedelta(days=7)


def _counters(name: str) -> tuple:
    def total(model, **key):
        rows = model.objects.filter(queue_name=name, **key)
        return rows.aggregate(n=Sum("n"))["n"] or 0

    jobs = {s: total(JobCount, status=s) for s in ("Completed", "Failed", "Dead", "Pending")}
    return jobs, total(CompletionCount), total(AttemptCount)


def _table_counts(name: str) -> dict:
    rows = JobRow.objects.filter(queue_name=name).values("status").annotate(n=Count("id"))
    return {row["status"]: row["n"] for row in rows}


def test_counts_stay_exact_through_an_archive_and_a_restore():
    queue = JobQueue(clock=MockClock())
    name = unique_queue("archive_counts")
    queue.clock.advance(-WEEK * 2)  # within the minutes the counters keep: the test's "now"
    done = finished(queue, name, 3)
    failed = finished(queue, name, 2, JobOutcome.dead("no"))
    queue.enqueue(Job(queue_name=name))
    queue.clock.advance(WEEK * 2)
    before = _counters(name)
    assert before[1] == 3 and before[2] == 2

    assert queue.archive_jobs(WEEK, queue_name=name) == 5
    jobs, completions, attempts = _counters(name)
    assert {s: n for s, n in jobs.items() if n} == _table_counts(name) == {"Pending": 1}
    # What happened stays counted, as when the pruner deletes.
    assert (completions, attempts) == before[1:]

    assert len(queue.restore([*done, *failed])) == 5
    assert _counters(name) == before
    assert FailedAttempt.objects.filter(job_id__in=failed).count() == 2
    assert not ArchivedJob.objects.filter(id__in=[*done, *failed]).exists()
    connection.close()


def test_an_archive_batch_that_fails_leaves_every_job_where_it_was(monkeypatch):
    queue = JobQueue(clock=MockClock())
    name = unique_queue("archive_undone")
    ids = finished(queue, name, 3)
    queue.clock.advance(WEEK * 2)

    def broken(rows):  # after the jobs' delete: the archive's insert fails
        assert not JobRow.objects.filter(id__in=ids).exists()
        raise RuntimeError("lost connection")

    monkeypatch.setattr(queue.store, "insert_archived", broken)
    with pytest.raises(RuntimeError):
        queue.archive_jobs(WEEK, queue_name=name)
    monkeypatch.undo()
    assert not ArchivedJob.objects.filter(id__in=ids).exists()
    assert JobRow.objects.filter(id__in=ids).count() == 3
    assert queue.archive_jobs(WEEK, queue_name=name) == 3  # the retry moves them once
    assert ArchivedJob.objects.filter(id__in=ids).count() == 3
    connection.close()


def test_the_move_leaves_no_history_tag_or_edge_behind_and_the_counts_exact():
    queue = JobQueue(clock=MockClock())
    name = unique_queue("archive_rows")
    first = Job(queue_name=name, tags=["eu", "vip"])
    second = Job(queue_name=name, tags=["eu"])
    queue.enqueue_workflow(JobGroup("wf").add_job(first).then(second))
    for _ in range(2):
        runs = queue.dequeue(name)
        queue.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    failed = finished(queue, name, 2, JobOutcome.dead("no"))
    tagged = queue.enqueue(Job(queue_name=name, tags=["us"]))
    runs = queue.dequeue(name)
    queue.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
    kept = queue.enqueue(Job(queue_name=name, tags=["eu"]))
    moved = [first.id, second.id, *failed, tagged]
    assert JobTag.objects.filter(job_id__in=moved).count() == 4
    assert FailedAttempt.objects.filter(job_id__in=failed).count() == 2
    assert JobDependency.objects.filter(parent_id=first.id, job_id=second.id).exists()
    queue.clock.advance(WEEK * 2)

    assert queue.archive_jobs(WEEK, queue_name=name) == 5
    assert not JobRow.objects.filter(id__in=moved).exists()
    assert not JobTag.objects.filter(job_id__in=moved).exists()
    assert not FailedAttempt.objects.filter(job_id__in=moved).exists()
    assert not JobDependency.objects.filter(job_id__in=moved).exists()
    assert not JobDependency.objects.filter(parent_id__in=moved).exists()
    assert list(JobTag.objects.filter(job_id=kept).values_list("tag", flat=True)) == ["eu"]
    jobs = _counters(name)[0]
    assert {s: n for s, n in jobs.items() if n} == _table_counts(name) == {"Pending": 1}
    archived = {row.id: row for row in ArchivedJob.objects.filter(id__in=moved)}
    assert set(archived) == set(moved)
    assert archived[first.id].tags == ["eu", "vip"]
    assert queue.get_archived_job(first.id).dependents == [second.id]
    assert [a.failures for a in map(archived.get, failed)] == [1, 1]
    connection.close()


def test_two_archivers_at_once_move_every_job_once():
    setup = JobQueue(clock=MockClock())
    name = unique_queue("archive_race")
    ids = []
    for _ in range(4):
        setup.enqueue_many([Job(queue_name=name) for _ in range(50)])
        runs = setup.dequeue(name, DequeueOptions(batch_size=50))
        setup.finish_job_runs([(run, JobOutcome.completed()) for run in runs])
        ids += [run.id for run in runs]
    later = setup.now() + WEEK * 2
    moved, errors = [], []
    start = threading.Barrier(2)

    def archiver():
        try:
            queue = JobQueue(clock=MockClock(later))
            start.wait()
            moved.append(queue.archive_jobs(WEEK, queue_name=name, batch_size=7))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=archiver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(moved) == 200
    assert ArchivedJob.objects.filter(id__in=ids).count() == 200
    assert not JobRow.objects.filter(queue_name=name).exists()
    assert _counters(name)[0]["Completed"] == 0
    connection.close()
