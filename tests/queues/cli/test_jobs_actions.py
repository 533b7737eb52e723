"""`manage.py jobs retry`, `cancel`, `delete` (by ids, or a filter's jobs after a count and
a confirmation), `pause` and `resume`; `--dry-run` reads and says, and changes nothing."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError

from queues.api import Job, JobOutcome, JobQueue, JobStatus
from queues.models import Job as Row
from tests.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished, jobs, queue_days_ago, snapshot

pytestmark = pytest.mark.django_db


def _statuses(name: str) -> dict[str, str]:
    return {str(i): s for i, s in Row.objects.filter(queue_name=name).values_list("id", "status")}


def test_retry_cancel_and_delete_by_ids():
    name = unique_queue("cli_ids")
    queue = JobQueue()
    dead = finished(queue, name, 2, JobOutcome.dead("no"))
    pending = queue.enqueue(Job(queue_name=name))

    assert jobs("retry", *map(str, dead))[0].strip() == "retried 2 jobs"
    assert {s for i, s in _statuses(name).items() if i != str(pending)} == {JobStatus.PENDING}
    assert jobs("cancel", str(pending))[0].strip() == "cancelled 1 jobs"
    assert queue.get_job(pending).status == JobStatus.FAILED
    assert jobs("delete", str(pending), str(dead[0]))[0].strip() == "deleted 2 jobs"
    assert set(_statuses(name)) == {str(dead[1])}


def test_an_action_refused_for_one_id_is_done_for_none():
    name = unique_queue("cli_refuse")
    queue = JobQueue()
    done = finished(queue, name, 1)  # Completed: cannot be retried
    dead = finished(queue, name, 1, JobOutcome.dead("no"))
    before = snapshot()
    with pytest.raises(CommandError, match="cannot be retried; nothing changed"):
        jobs("retry", str(dead[0]), str(done[0]))
    queue.enqueue(Job(queue_name=name))
    running = queue.dequeue_one(name)
    before = snapshot()
    with pytest.raises(CommandError, match="is Running; cancel it first"):
        jobs("delete", str(dead[0]), str(running.id))
    assert snapshot() == before


def test_a_filter_is_counted_and_needs_yes():
    name = unique_queue("cli_filter")
    finished(queue_days_ago(2), name, 3, JobOutcome.dead("old"))
    finished(JobQueue(), name, 2, JobOutcome.dead("new"))
    before = snapshot()
    with pytest.raises(CommandError, match="retry 3 jobs: add --yes"):
        jobs("retry", "--queue", name, "--older-than", "1d")
    assert snapshot() == before
    out, _ = jobs("retry", "--queue", name, "--older-than", "1d", "--yes")
    assert out.splitlines() == [
        f"3 jobs match (queue {name!r}, older than 1 day, 0:00:00)",
        "retried 3 jobs",
    ]
    assert sorted(_statuses(name).values()) == ["Dead", "Dead", "Pending", "Pending", "Pending"]


@pytest.mark.parametrize("action", ["retry", "cancel", "delete"])
def test_a_dry_run_says_what_it_would_do_and_changes_nothing(action):
    name = unique_queue("cli_dry")
    queue = JobQueue()
    finished(queue, name, 2, JobOutcome.dead("no"))
    queue.enqueue_many([Job(queue_name=name) for _ in range(3)])
    queue.dequeue_one(name)  # one Running
    before = snapshot()
    out, _ = jobs(action, "--queue", name, "--dry-run")
    assert snapshot() == before
    would, skipped = {
        "retry": ("retried 5 jobs", ""),  # a Running one too: its run is fenced out
        "cancel": ("cancelled 3 jobs", ", skipped 2 Dead (the action does not apply)"),
        "delete": ("deleted 4 jobs", ", skipped 1 Running (the action does not apply)"),
    }[action]
    assert out.splitlines() == [
        f"5 jobs match (queue {name!r})",
        f"dry run: would have {would}{skipped}; nothing changed",
    ]
    # The same without --dry-run does it, and skips what the engine refuses.
    out, _ = jobs(action, "--queue", name, "--yes")
    assert out.splitlines()[-1].startswith(would)
    assert snapshot() != before


def test_delete_by_filter_keeps_a_job_that_stopped_matching():
    """The filter is asked again of each locked row: a job retried after the read is kept."""
    name = unique_queue("cli_race")
    queue = JobQueue()
    ids = finished(queue, name, 3, JobOutcome.dead("no"))
    queue.retry_job(ids[0])  # Pending now: the filter says Dead
    from queues.cli.selection import Selection

    selection = Selection(queue=name, statuses=[JobStatus.DEAD])
    result = queue.delete_jobs(ids, where=lambda job: selection.matches(job, queue.now()))
    assert result.kept == [ids[0]] and len(result.deleted) == 2


def test_pause_and_resume_a_queue():
    name = unique_queue("cli_pause")
    queue = JobQueue()
    assert jobs("pause", name, "--reason", "deploy", "--by", "ops")[0].strip() == f"paused {name!r}"
    assert queue.is_queue_paused(name)
    from queues.models import QueuePause

    row = QueuePause.objects.get(queue_name=name)
    assert (row.reason, row.paused_by) == ("deploy", "ops")
    assert jobs("resume", name)[0].strip() == f"resumed {name!r}"
    assert not queue.is_queue_paused(name)
    assert jobs("resume", name)[0].strip() == f"{name!r} was not paused"


def test_a_tag_selects_the_jobs_that_carry_it():
    name = unique_queue("cli_tag")
    queue = JobQueue()
    queue.enqueue_many(
        [Job(queue_name=name, tags=["eu"], payload={"n": 1}), Job(queue_name=name, tags=["us"])]
    )
    eu = queue.enqueue(Job(queue_name=name, tags=[name, "eu"]))
    listed, _ = jobs("list", "--tag", "eu", "--queue", name, "--json")
    assert len(json.loads(listed)) == 2
    out, _ = jobs("cancel", "--tag", name, "--yes")  # every queue's jobs with the tag
    assert out.split("\n")[:2] == [f"1 jobs match (tag {name!r})", "cancelled 1 jobs"]
    assert {s for i, s in _statuses(name).items() if i == str(eu)} == {JobStatus.FAILED}
    assert sorted(_statuses(name).values()).count(JobStatus.PENDING) == 2

    before = snapshot()
    with pytest.raises(CommandError, match="--tag"):
        jobs("delete", "--tag", " eu", "--yes")
    assert snapshot() == before
