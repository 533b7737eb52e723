"""The admin's side doors are closed: deleting a job, a batch or a workflow goes through the
engine (`delete_job`, with its refusals), by the bulk action and by the change form alike, and
a job's page offers only the actions the job offers."""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from queues.admin import JobAdmin
from queues.api import DependencyStatus, Job, JobBatch, JobGroup, JobOutcome, JobStatus
from queues.models import Batch, JobDependency, Workflow
from tests.conftest import unique_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(superuser_client):
    return superuser_client


def _bulk_delete(client, model: str, ids, confirm: bool):
    data = {"action": "delete_selected", helpers.ACTION_CHECKBOX_NAME: [str(i) for i in ids]}
    if confirm:
        data["post"] = "yes"
    return client.post(reverse(f"admin:queues_{model}_changelist"), data, follow=True)


def _running(engine, queue):
    engine.enqueue(Job(queue_name=queue))
    return engine.dequeue_one(queue)


def _dead(engine, queue):
    job_id = engine.enqueue(Job(queue_name=queue))
    engine.mark_job_dead(job_id, "boom")
    return job_id


def test_bulk_delete_with_a_running_job_is_refused_whole(client, engine):
    queue = unique_queue("adel")
    running, dead = _running(engine, queue), _dead(engine, queue)
    page = _bulk_delete(client, "job", [running.id, dead], confirm=False).content.decode()
    assert "The engine refuses to delete the selected jobs" in page
    assert f"job {running.id} is Running; cancel it first" in page
    _bulk_delete(client, "job", [running.id, dead], confirm=True)
    assert engine.get_job(running.id).status == JobStatus.RUNNING
    assert engine.get_job(dead) is not None


def test_bulk_delete_goes_through_the_engine(client, engine):
    """The stock cascade deleted the edge and left the child waiting; the engine releases
    it, and takes the job out of its batch's tally."""
    queue = unique_queue("adel")
    parent = Job(queue_name=queue)
    engine.enqueue(parent)
    child = Job(queue_name=queue).depends_on_job(parent)
    engine.enqueue(child)
    batch_id = engine.enqueue_batch(JobBatch("b", jobs=[Job(queue_name=queue) for _ in range(2)]))
    in_batch = engine.get_batch_jobs(batch_id)[0].id
    response = _bulk_delete(client, "job", [parent.id, in_batch], confirm=True)
    assert "Successfully deleted 2 jobs" in response.content.decode()
    assert engine.get_job(parent.id) is None and engine.get_job(in_batch) is None
    assert engine.get_job(child.id).dependency_status == DependencyStatus.SATISFIED
    assert engine.dequeue_one(queue).id == child.id
    assert engine.get_batch_status(batch_id).total_jobs == 1


def test_the_change_form_delete_goes_through_the_engine(client, engine):
    queue = unique_queue("adel")
    running, dead = _running(engine, queue), _dead(engine, queue)
    url = reverse("admin:queues_job_delete", args=[running.id])
    page = client.get(url).content.decode()
    assert "The engine refuses to delete the job" in page and f"job {running.id} is Running" in page
    client.post(url, {"post": "yes"})
    assert engine.get_job(running.id).status == JobStatus.RUNNING
    response = client.post(reverse("admin:queues_job_delete", args=[dead]), {"post": "yes"})
    assert response.status_code == 302 and engine.get_job(dead) is None


def test_a_refusal_at_the_last_moment_is_a_message(client, engine, monkeypatch):
    """The job was claimed after the page checked it: the engine refuses, nothing is
    deleted, and the admin says so instead of answering 500."""
    queue = unique_queue("adel")
    running = _running(engine, queue)
    monkeypatch.setattr(JobAdmin, "delete_refusal", lambda self, job: None)
    url = reverse("admin:queues_job_delete", args=[running.id])
    response = client.post(url, {"post": "yes"}, follow=True)
    assert response.status_code == 200 and "Delete refused" in response.content.decode()
    assert engine.get_job(running.id).status == JobStatus.RUNNING
    response = _bulk_delete(client, "job", [running.id], confirm=True)
    assert "Delete refused" in response.content.decode()
    assert engine.get_job(running.id) is not None


def test_a_batch_is_deleted_with_its_jobs_unless_one_is_running(client, engine):
    queue = unique_queue("adel")
    batch_id = engine.enqueue_batch(JobBatch("b", jobs=[Job(queue_name=queue) for _ in range(3)]))
    run = engine.dequeue_one(queue)
    page = _bulk_delete(client, "batch", [batch_id], confirm=True).content.decode()
    assert "Cannot delete" in page and "is Running; cancel it first" in page
    assert len(engine.get_batch_jobs(batch_id)) == 3
    engine.finish_job_run(run, JobOutcome.completed())
    url = reverse("admin:queues_batch_delete", args=[batch_id])
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not Batch.objects.filter(id=batch_id).exists()
    assert engine.get_batch_jobs(batch_id) == []


def test_a_workflow_is_deleted_with_its_jobs_and_releases_those_outside(client, engine):
    queue = unique_queue("adel")
    first, second = Job(queue_name=queue), Job(queue_name=queue)
    workflow_id = engine.enqueue_workflow(JobGroup("w").add_job(first).then(second))
    outside = Job(queue_name=queue).depends_on_job(second)
    engine.enqueue(outside)
    _bulk_delete(client, "workflow", [workflow_id], confirm=True)
    assert not Workflow.objects.filter(id=workflow_id).exists()
    assert engine.get_job(first.id) is None and engine.get_job(second.id) is None
    assert engine.get_job(outside.id).dependency_status == DependencyStatus.SATISFIED


def test_dependency_edges_cannot_be_deleted_alone(client, engine):
    queue = unique_queue("adel")
    parent = Job(queue_name=queue)
    engine.enqueue(parent)
    engine.enqueue(Job(queue_name=queue).depends_on_job(parent))
    edge = JobDependency.objects.get(parent_id=parent.id)
    url = reverse("admin:queues_jobdependency_delete", args=[edge.id])
    assert client.get(url).status_code == 403
    changelist = client.get(reverse("admin:queues_jobdependency_changelist")).content.decode()
    assert "delete_selected" not in changelist


@pytest.mark.parametrize(
    ("state", "offered"),
    [
        ("dead", {"retry_now"}),
        ("running", {"retry_now", "cancel", "mark_dead", "release"}),
        ("completed", set()),
    ],
)
def test_a_jobs_page_offers_the_actions_the_job_offers(client, engine, state, offered):
    queue = unique_queue("adel")
    if state == "dead":
        job_id = _dead(engine, queue)
    else:
        run = _running(engine, queue)
        job_id = run.id
        if state == "completed":
            engine.finish_job_run(run, JobOutcome.completed())
    page = client.get(reverse("admin:queues_job_change", args=[job_id])).content.decode()
    shown = {a for a in JobAdmin.form_actions if f'<option value="{a}">' in page}
    assert shown == offered
