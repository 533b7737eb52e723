"""`manage.py jobs archive` and `jobs restore`, and `jobs show` of an archived job: in this
process (call_command) and as a child process, bad input refused with nothing changed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import CommandError
from django.test import override_settings

from queues.api import Job, JobOutcome, JobQueue
from queues.models import ArchivedJob
from queues.models import Job as Row
from tests.conftest import unique_queue
from tests.queues.cli.test_jobs_process import manage_jobs
from tests.queues.support.jobs_helpers import finished, jobs, queue_days_ago, snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_archive_a_dry_run_a_limit_then_show_and_restore():
    name = unique_queue("cli_archive")
    old = queue_days_ago(10)
    ids = finished(old, name, 3) + finished(old, name, 1, JobOutcome.dead("bad ✗"))
    recent = finished(queue_days_ago(1), name, 1)
    pending = JobQueue().enqueue(Job(queue_name=name))

    before = snapshot()
    out, _ = jobs("archive", "--older-than", "7d", "--queue", name, "--dry-run")
    assert out.splitlines()[0].startswith("4 jobs that finished before")
    assert out.splitlines()[-1] == "dry run: nothing archived"
    assert snapshot() == before

    out, _ = jobs("archive", "--older-than", "7d", "--queue", name, "--limit", "3")
    assert out.startswith("archived 3 jobs")
    out, _ = jobs("archive", "--older-than", "7d", "--queue", name, "--batch-size", "1")
    assert out.startswith("archived 1 jobs")
    assert set(ArchivedJob.objects.filter(queue_name=name).values_list("id", flat=True)) == set(ids)
    assert set(Row.objects.filter(queue_name=name).values_list("id", flat=True)) == {
        *recent,
        pending,
    }

    dead = ids[-1]
    shown, _ = jobs("show", str(dead))
    assert shown.startswith("archived at ")
    assert "bad ✗" in shown and "failed attempts: 1" in shown
    found = json.loads(jobs("show", str(dead), "--json")[0])
    assert found["archived"] is True and found["status"] == "Dead"
    assert len(found["attempts"]) == 1

    out, _ = jobs("restore", str(dead), str(ids[0]))
    assert out.strip() == "restored 2 jobs"
    assert Row.objects.get(id=dead).status == "Dead"
    assert not ArchivedJob.objects.filter(id__in=[dead, ids[0]]).exists()
    with pytest.raises(CommandError, match="1 of 1 ids were not restored"):
        jobs("restore", str(dead))  # in the table now


def test_archive_takes_the_setting_and_refuses_bad_input():
    name = unique_queue("cli_archive_bad")
    finished(queue_days_ago(10), name, 1)
    before = snapshot()
    with pytest.raises(CommandError, match="ARCHIVE_AFTER"):
        jobs("archive")
    for args, message in (
        (("--older-than", "soon"), "is not a duration"),
        (("--older-than", "7d", "--limit", "0"), "--limit must be between"),
        (("--older-than", "7d", "--batch-size", "20000"), "--batch-size must be between"),
        (("--older-than", "7d", "--queue", " "), "a queue name must be"),
    ):
        with pytest.raises(CommandError, match=message):
            jobs("archive", *args)
    with pytest.raises(CommandError, match="is not a job id"):
        jobs("restore", "nope")
    assert snapshot() == before
    with override_settings(HAMMERWEB={"ARCHIVE_AFTER": timedelta(days=7)}):
        out, _ = jobs("archive", "--queue", name)
    assert out.startswith("archived 1 jobs")


def test_archive_restore_and_show_in_a_child_process():
    name = unique_queue("cli_archive_proc")
    (job_id,) = finished(queue_days_ago(10), name, 1)
    done = manage_jobs("archive", "--older-than", "7d", "--queue", name, "--vacuum")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("archived 1 jobs")
    shown = manage_jobs("show", str(job_id), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["archived"] is True
    missing = manage_jobs("restore", "0" * 32)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    back = manage_jobs("restore", str(job_id))
    assert back.returncode == 0, back.stderr
    assert Row.objects.get(id=job_id).status == "Completed"
