"""The batch and workflow pages list the callbacks declared, and link to each callback job
once enqueued; the admin shows them read-only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from queues.api import DequeueOptions, Job, JobBatch, JobGroup, JobOutcome
from queues.models import Batch
from tests.queues.support.task_functions import get_attempt

pytestmark = pytest.mark.django_db

EVIL = "<script>alert('x')</script>"


def test_the_batch_page_lists_its_callbacks_and_links_the_enqueued_one(
    engine, qname, viewer_client
):
    batch = JobBatch("import", jobs=[Job(queue_name=qname)])
    batch.on_success(Job(queue_name=EVIL)).on_failure(get_attempt, args=["x"])
    batch_id = engine.enqueue_batch(batch)
    url = reverse("dashboard:batch", args=[batch_id])
    html = viewer_client.get(url).content.decode()
    assert 'id="callbacks"' in html and html.count("not yet") == 2
    assert f"task {get_attempt.module_path}" in html
    assert EVIL not in html and "&lt;script&gt;" in html

    (run,) = engine.dequeue(qname, DequeueOptions.batch(1))
    engine.finish_job_run(run, JobOutcome.completed())
    success = Batch.objects.get(id=batch_id).callback_jobs["success"]
    html = viewer_client.get(url).content.decode()
    assert reverse("dashboard:job", args=[success]) in html
    assert "not yet" not in html and html.count("not called") == 1  # the batch completed

    engine.delete_job(success)
    html = viewer_client.get(url).content.decode()
    assert f"{success[:8]} (deleted)" in html


def test_a_workflow_without_callbacks_shows_no_section(engine, qname, viewer_client):
    workflow = engine.enqueue_workflow(JobGroup("plain").add_job(Job(queue_name=qname)))
    html = viewer_client.get(reverse("dashboard:workflow", args=[workflow])).content.decode()
    assert 'id="callbacks"' not in html


def test_junk_callbacks_on_a_row_are_no_error(engine, qname, viewer_client):
    batch_id = engine.enqueue_batch(JobBatch("junk", jobs=[Job(queue_name=qname)]))
    Batch.objects.filter(id=batch_id).update(
        callbacks={"success": "junk", "failure": {"payload": 3}}, callback_jobs={"failure": "x"}
    )
    page = viewer_client.get(reverse("dashboard:batch", args=[batch_id]))
    assert page.status_code == 200 and "x (deleted)" in page.content.decode()


def test_the_admin_shows_a_groups_callbacks(superuser_client, engine, qname):
    batch = JobBatch("b", jobs=[Job(queue_name=qname)]).on_complete(Job(queue_name="after"))
    batch_id = engine.enqueue_batch(batch)
    page = superuser_client.get(reverse("admin:queues_batch_change", args=[batch_id]))
    html = page.content.decode()
    assert page.status_code == 200 and "field-callbacks" in html and "after" in html


def test_an_archived_callback_job_is_linked_and_marked_archived(engine, qname, viewer_client):
    batch = JobBatch("nightly", jobs=[Job(queue_name=qname)])
    batch.on_complete(Job(queue_name=f"{qname}_cb"))
    batch_id = engine.enqueue_batch(batch)
    (run,) = engine.dequeue(qname, DequeueOptions.batch(1))
    engine.finish_job_run(run, JobOutcome.completed())
    (callback,) = engine.dequeue(f"{qname}_cb", DequeueOptions.batch(1))
    engine.finish_job_run(callback, JobOutcome.completed())
    assert engine.archive_jobs(timedelta(0), queue_name=f"{qname}_cb") == 1
    html = viewer_client.get(reverse("dashboard:batch", args=[batch_id])).content.decode()
    assert reverse("dashboard:job", args=[callback.id]) in html
    assert '<span class="pill archived">Archived</span>' in html and "(deleted)" not in html
