"""The pruner's archive pass (HAMMERWEB["ARCHIVE_AFTER"]) on the database and in memory: it
moves what finished long enough ago before anything is deleted, and only when set."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from queues import checks
from queues.api import JobOutcome
from queues.ops.maintenance import Pruner
from tests.queues.conftest import unique_queue
from tests.queues.support.jobs_helpers import finished

DAY = timedelta(days=1)


def test_the_pruner_archives_first_when_the_setting_is_set(queue):
    name = unique_queue("prune_archive")
    old = finished(queue, name, 3) + finished(queue, name, 1, JobOutcome.dead("x"))
    queue.clock.advance(DAY * 10)
    recent = finished(queue, name, 1)

    with override_settings(HAMMERWEB={"ARCHIVE_AFTER": DAY * 3, "ARCHIVE_BATCH": 2}):
        pruner = Pruner(queue, older_than=DAY * 30)
    assert (pruner.archive_after, pruner.archive_batch) == (DAY * 3, 2)
    result = pruner.run_once()
    assert (result.archived, result.jobs) == (4, 0)
    assert all(queue.get_archived_job(job_id) for job_id in old)
    assert queue.get_job(recent[0]) is not None
    assert pruner.run_once().archived == 0


def test_without_the_setting_nothing_is_archived(queue):
    name = unique_queue("prune_no_archive")
    (job_id,) = finished(queue, name, 1)
    queue.clock.advance(DAY * 10)
    result = Pruner(queue, older_than=None).run_once()
    assert result.archived == 0
    assert queue.get_job(job_id) is not None and queue.get_archived_job(job_id) is None


@pytest.mark.parametrize("batch", [0, True, "10"])
def test_a_bad_archive_batch_is_refused(queue, batch):
    with pytest.raises(ValueError, match="archive_batch"):
        Pruner(queue, archive_batch=batch)
    with pytest.raises(ValueError, match="archive_after"):
        Pruner(queue, archive_after=timedelta(0))


def test_the_checks_refuse_a_bad_archive_setting(settings):
    settings.HAMMERWEB = {"ARCHIVE_AFTER": timedelta(0), "ARCHIVE_BATCH": 0}
    text = " ".join(e.msg for e in checks.check_settings())
    assert "HAMMERWEB['ARCHIVE_AFTER'] must be a timedelta above 0" in text
    assert "HAMMERWEB['ARCHIVE_BATCH'] must be a whole number above 0, not 0" in text
    settings.HAMMERWEB = {"ARCHIVE_AFTER": "3d"}
    assert "must be a timedelta, not '3d'" in checks.check_settings()[0].msg
    settings.HAMMERWEB = {"ARCHIVE_AFTER": None, "ARCHIVE_BATCH": 500}
    assert checks.check_settings() == []
