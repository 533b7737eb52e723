"""The admin: every model registered; job actions and queue pause/resume go through the
engine, and a refusal is a message, never a 500."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse

from queues.api import Job, JobStatus
from queues.models import (
    ArchivedJob,
    Batch,
    CompletionCount,
    JobCount,
    JobDependency,
    QueuePause,
    ReaperRun,
    WorkerProcess,
    Workflow,
)
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


def _job(engine, queue, dead=False):
    job = Job(queue_name=queue, payload={"x": 1})
    engine.enqueue(job)
    if dead:
        engine.mark_job_dead(job.id, "boom")
    return job.id


def _act(client, model: str, action: str, ids):
    return client.post(
        reverse(f"admin:queues_{model}_changelist"),
        {"action": action, helpers.ACTION_CHECKBOX_NAME: [str(i) for i in ids]},
        follow=True,
    )


def test_every_model_is_registered():
    for model in (
        Job,
        Batch,
        Workflow,
        JobDependency,
        JobCount,
        CompletionCount,
        QueuePause,
        ReaperRun,
        WorkerProcess,
        ArchivedJob,
    ):
        assert admin.site.is_registered(model), model


def test_changelists_and_filters_render(superuser_client, engine):
    queue = unique_queue("adm")
    job_id = _job(engine, queue, dead=True)
    for model in (
        "job",
        "batch",
        "workflow",
        "jobdependency",
        "jobcount",
        "completioncount",
        "queuepause",
        "reaperrun",
        "workerprocess",
    ):
        url = reverse(f"admin:queues_{model}_changelist")
        assert superuser_client.get(url).status_code == 200, model
    url = reverse("admin:queues_job_changelist")
    page = superuser_client.get(url, {"status__exact": "Dead", "queue_name": queue, "q": "boom"})
    assert str(job_id) in page.content.decode()
    page = superuser_client.get(reverse("admin:queues_job_change", args=[job_id]))
    assert page.status_code == 200 and "Retry now" in page.content.decode()


def test_retry_cancel_and_mark_dead_actions(superuser_client, engine):
    queue = unique_queue("adm")
    dead, pending, other = _job(engine, queue, True), _job(engine, queue), _job(engine, queue)
    _act(superuser_client, "job", "retry_now", [dead])
    assert engine.get_job(dead).status == JobStatus.PENDING
    _act(superuser_client, "job", "cancel", [pending])
    assert engine.get_job(pending).status == JobStatus.FAILED
    _act(superuser_client, "job", "mark_dead", [other])
    assert engine.get_job(other).status == JobStatus.DEAD


def test_a_refused_action_is_a_message(superuser_client, engine):
    queue = unique_queue("adm")
    dead = _job(engine, queue, dead=True)
    response = _act(superuser_client, "job", "cancel", [dead])
    assert response.status_code == 200
    assert "Cancel refused" in response.content.decode()
    assert engine.get_job(dead).status == JobStatus.DEAD


def test_release_a_running_job(superuser_client, engine):
    queue = unique_queue("adm")
    _job(engine, queue)
    job = engine.dequeue_one(queue)
    _act(superuser_client, "job", "release", [job.id])
    stored = engine.get_job(job.id)
    assert stored.status == JobStatus.PENDING and stored.attempts == 0


def test_pause_from_the_add_form_and_resume_action(superuser_client, engine):
    queue = unique_queue("adm")
    superuser_client.post(
        reverse("admin:queues_queuepause_add"), {"queue_name": queue, "reason": "deploy"}
    )
    pause = QueuePause.objects.get(queue_name=queue)
    assert pause.paused_by == "root" and pause.reason == "deploy"
    _act(superuser_client, "queuepause", "resume", [queue])
    assert not engine.is_queue_paused(queue)


def test_actions_need_the_change_permission(client, engine):
    from django.contrib.auth.models import Permission

    viewer = User.objects.create_user("looker", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_job"))
    client.force_login(viewer)
    dead = _job(engine, unique_queue("adm"), dead=True)
    page = client.get(reverse("admin:queues_job_changelist"))
    html = page.content.decode()
    assert page.status_code == 200 and "retry_now" not in html and "pause_queues" not in html
    _act(client, "job", "retry_now", [dead])
    assert engine.get_job(dead).status == JobStatus.DEAD


def test_job_change_form_is_read_only_and_escapes_the_payload(superuser_client, engine):
    job = Job(queue_name=unique_queue("adm"), payload={"h": "<script>x</script>"})
    engine.enqueue(job)
    html = superuser_client.get(reverse("admin:queues_job_change", args=[job.id])).content
    assert b"<script>x</script>" not in html and b"&lt;script&gt;" in html


def test_pause_and_resume_the_queues_of_selected_jobs(superuser_client, engine):
    queue = unique_queue("adm")
    job = _job(engine, queue)
    _act(superuser_client, "job", "pause_queues", [job])
    assert QueuePause.objects.get(queue_name=queue).paused_by == "root"
    _act(superuser_client, "job", "resume_queues", [job])
    assert not engine.is_queue_paused(queue)


@pytest.mark.parametrize("model", [Batch, Workflow])
def test_a_group_page_shows_every_column_in_the_tables_order(superuser_client, model):
    group = model.objects.create(name="g", total_jobs=1)
    with connection.cursor() as cursor:
        table = connection.introspection.get_table_description(cursor, model._meta.db_table)
    columns = [column.name for column in table if column.name != "id"]
    url = reverse(f"admin:queues_{model._meta.model_name}_change", args=[group.pk])
    page = superuser_client.get(url)
    shown = re.findall(r'class="form-row field-(\w+)', page.content.decode())
    assert page.status_code == 200 and shown == columns
