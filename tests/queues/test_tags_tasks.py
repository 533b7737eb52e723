"""django.tasks tasks with tags and meta: `@task(tags=..., meta=...)` and `.using(...)` on
Hammerweb's backend."""

from __future__ import annotations

import pytest

import tests.queues.support.task_functions as tasks
from queues.api import InvalidTags, JobQueue

pytestmark = pytest.mark.django_db


def test_a_tasks_jobs_carry_its_tags_and_meta():
    result = tasks.charge.enqueue(7)
    job = JobQueue().get_job(result.id)
    assert job.tags == ["billing", "eu"] and job.meta == {"team": "payments"}
    assert tasks.charge.tags == ("billing", "eu"), "kept as a tuple: the task is frozen"


def test_using_gives_other_tags_and_meta_and_keeps_the_rest():
    other = tasks.charge.using(tags=["billing", "us"], meta={"team": "growth"}, priority=50)
    job = JobQueue().get_job(other.enqueue(8).id)
    assert job.tags == ["billing", "us"] and job.meta == {"team": "growth"}
    assert job.priority == 3  # High: Django's 50
    untouched = JobQueue().get_job(tasks.charge.using(priority=50).enqueue(9).id)
    assert untouched.tags == ["billing", "eu"], "using() without tags keeps the task's"
    plain = JobQueue().get_job(tasks.noop_task.enqueue().id)
    assert plain.tags == [] and plain.meta == {}
    assert [j.id for j in JobQueue().get_tagged_jobs("us")] == [job.id]


def test_malformed_tags_of_a_task_are_refused_at_enqueue():
    with pytest.raises(InvalidTags):
        tasks.charge.using(tags=["ok", "a\x00b"]).enqueue(1)
    with pytest.raises(InvalidTags):
        tasks.charge.using(meta=["not", "an", "object"]).enqueue(1)
    assert JobQueue().get_tagged_jobs("ok") == []
