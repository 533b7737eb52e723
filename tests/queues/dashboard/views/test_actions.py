"""Every action: permission (403), CSRF, the engine call it makes, and refusals shown as a
message (never a 500)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from queues.api import Job, JobStatus
from tests.queues.dashboard.views.conftest import HTMX, enqueue, make_dead

pytestmark = pytest.mark.django_db


@pytest.fixture
def actions(engine, qname):
    """(url, data, permission) of every action, each with a job it can act on."""
    dead = make_dead(engine, qname)
    pending = enqueue(engine, qname)
    gone = make_dead(engine, qname)
    cron = enqueue(engine, qname, cron_schedule="0 0 * * * *")
    return [
        (reverse("dashboard:pause"), {"queue": qname}),
        (reverse("dashboard:resume"), {"queue": qname}),
        (reverse("dashboard:limit"), {"queue": qname, "max_running": "2"}),
        (reverse("dashboard:bulk"), {"action": "retry", "ids": [dead.id]}),
        (reverse("dashboard:bulk"), {"action": "delete", "ids": [gone.id]}),
        (reverse("dashboard:run-reaper"), {}),
        (reverse("dashboard:job-retry", args=[dead.id]), {}),
        (reverse("dashboard:job-cancel", args=[pending.id]), {}),
        (reverse("dashboard:job-delete", args=[gone.id]), {}),
        (reverse("dashboard:recurring-disable", args=[cron.id]), {}),
        (reverse("dashboard:recurring-enable", args=[cron.id]), {}),
        (reverse("dashboard:recurring-run-now", args=[cron.id]), {}),
    ]


@pytest.mark.parametrize(
    "who", ["viewer_client", "csrf_client"], ids=["without-permission", "without-csrf-token"]
)
def test_every_action_is_refused_with_403(who, actions, request, engine, qname):
    client = request.getfixturevalue(who)
    before = sorted(Job.objects.values_list("id", "status"))
    for url, data in actions:
        assert client.post(url, data, headers=HTMX).status_code == 403, url
    assert sorted(Job.objects.values_list("id", "status")) == before
    assert not engine.is_queue_paused(qname)
    assert engine.queue_config(qname).max_running is None


def test_every_action_is_post_only(actions, operator_client):
    for url, _ in actions:
        assert operator_client.get(url).status_code == 405, url


def test_every_action_needs_a_staff_login(actions, client):
    for url, data in actions:
        response = client.post(url, data)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url


def test_a_post_with_the_csrf_token_passes(csrf_client, engine, qname):
    page = csrf_client.get(reverse("dashboard:overview"))
    token = page.cookies["csrftoken"].value
    response = csrf_client.post(
        reverse("dashboard:pause"), {"queue": qname}, headers={**HTMX, "X-CSRFToken": token}
    )
    assert response.status_code == 200
    assert engine.is_queue_paused(qname)


def test_pause_and_resume_call_the_engine(operator_client, engine, qname):
    response = operator_client.post(reverse("dashboard:pause"), {"queue": qname}, headers=HTMX)
    assert response.status_code == 200 and response["HX-Trigger"] == "refresh"
    assert f"Paused {qname}" in response.content.decode()
    pause = engine.is_queue_paused(qname)
    assert pause
    from queues.models import QueuePause

    assert QueuePause.objects.get(queue_name=qname).paused_by == "operator"
    operator_client.post(reverse("dashboard:resume"), {"queue": qname}, headers=HTMX)
    assert not engine.is_queue_paused(qname)


def test_pause_of_a_bad_queue_name_is_a_message(operator_client):
    response = operator_client.post(reverse("dashboard:pause"), {"queue": ""}, headers=HTMX)
    assert response.status_code == 200
    assert "notice-error" in response.content.decode()


def test_retry_a_dead_job(operator_client, engine, qname):
    job = make_dead(engine, qname)
    response = operator_client.post(reverse("dashboard:job-retry", args=[job.id]), headers=HTMX)
    assert response.status_code == 200 and "queued again" in response.content.decode()
    stored = engine.get_job(job.id)
    assert stored.status == JobStatus.PENDING and stored.attempts == 0


def test_retrying_a_completed_job_is_refused_in_place(operator_client, engine, qname):
    from queues.api import JobOutcome

    enqueue(engine, qname)
    job = engine.dequeue_one(qname)
    engine.finish_job_run(job, JobOutcome.completed())
    response = operator_client.post(reverse("dashboard:job-retry", args=[job.id]), headers=HTMX)
    assert response.status_code == 200
    text = response.content.decode()
    assert "notice-error" in text and "cannot be retried" in text
    assert engine.get_job(job.id).status == JobStatus.COMPLETED


def test_cancel_a_pending_job(operator_client, engine, qname):
    job = enqueue(engine, qname)
    operator_client.post(reverse("dashboard:job-cancel", args=[job.id]), headers=HTMX)
    assert engine.get_job(job.id).status == JobStatus.FAILED


def test_deleting_a_running_job_is_refused(operator_client, engine, qname):
    enqueue(engine, qname)
    job = engine.dequeue_one(qname)
    response = operator_client.post(reverse("dashboard:job-delete", args=[job.id]), headers=HTMX)
    assert "notice-error" in response.content.decode()
    assert engine.get_job(job.id) is not None


def test_delete_from_the_job_page_goes_to_the_queue(operator_client, engine, qname):
    job = make_dead(engine, qname)
    response = operator_client.post(reverse("dashboard:job-delete", args=[job.id]), headers=HTMX)
    assert response["HX-Redirect"] == reverse("dashboard:queue", args=[qname])
    assert engine.get_job(job.id) is None


def test_delete_needs_the_delete_permission(engine, qname, operator):
    from django.contrib.auth.models import Permission
    from django.test import Client

    operator.user_permissions.remove(Permission.objects.get(codename="delete_job"))
    client = Client()
    client.force_login(operator)
    job = make_dead(engine, qname)
    assert client.post(reverse("dashboard:job-delete", args=[job.id])).status_code == 403
    bulk = client.post(reverse("dashboard:bulk"), {"action": "delete", "ids": [job.id]})
    assert bulk.status_code == 403
    assert engine.get_job(job.id) is not None


def test_bulk_retry_reports_refusals(operator_client, engine, qname):
    dead = [make_dead(engine, qname) for _ in range(2)]
    pending = enqueue(engine, qname)
    ids = [j.id for j in dead] + [pending.id]
    response = operator_client.post(
        reverse("dashboard:bulk"), {"action": "cancel", "ids": ids}, headers=HTMX
    )
    text = response.content.decode()
    assert "1 of 3 jobs cancelled" in text and "Refused" in text
    assert engine.get_job(pending.id).status == JobStatus.FAILED


def test_bulk_retry_of_junk_and_unknown_ids_retries_the_others(operator_client, engine, qname):
    dead = [make_dead(engine, qname) for _ in range(2)]
    ids = [str(j.id) for j in dead] + ["not-an-id", "00000000-0000-4000-8000-000000000000"]
    response = operator_client.post(
        reverse("dashboard:bulk"), {"action": "retry", "ids": ids}, headers=HTMX
    )
    text = response.content.decode()
    assert response.status_code == 200 and "2 of 4 jobs queued again" in text, text
    assert "not a job id" in text and "(and 1 more)" in text
    assert {engine.get_job(j.id).status for j in dead} == {JobStatus.PENDING}


def test_bulk_retry_and_delete(operator_client, engine, qname):
    dead = [make_dead(engine, qname) for _ in range(3)]
    operator_client.post(
        reverse("dashboard:bulk"),
        {"action": "retry", "ids": [j.id for j in dead[:2]]},
        headers=HTMX,
    )
    assert [engine.get_job(j.id).status for j in dead] == ["Pending", "Pending", "Dead"]
    operator_client.post(
        reverse("dashboard:bulk"), {"action": "delete", "ids": [dead[2].id]}, headers=HTMX
    )
    assert engine.get_job(dead[2].id) is None


def test_bulk_with_nothing_selected_or_a_bad_verb(operator_client):
    response = operator_client.post(reverse("dashboard:bulk"), {"action": "retry"}, headers=HTMX)
    assert "Select some jobs first" in response.content.decode()
    response = operator_client.post(reverse("dashboard:bulk"), {"action": "drop"}, headers=HTMX)
    assert "notice-error" in response.content.decode()


def test_run_reaper_shows_its_result(operator_client, engine, qname):
    enqueue(engine, qname)
    job = engine.dequeue_one(qname)
    Job.objects.filter(id=job.id).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    response = operator_client.post(reverse("dashboard:run-reaper"), headers=HTMX)
    assert "Reaper ran: 1 requeued, 0 marked Dead." in response.content.decode()
    assert engine.get_job(job.id).status == JobStatus.PENDING
    from queues.models import ReaperRun

    assert ReaperRun.objects.get().ran_by == "dashboard:operator"


def test_recurring_toggles(operator_client, engine, qname):
    job = enqueue(engine, qname, cron_schedule="0 0 * * * *")
    operator_client.post(reverse("dashboard:recurring-disable", args=[job.id]), headers=HTMX)
    assert engine.get_job(job.id).recurring is False
    operator_client.post(reverse("dashboard:recurring-enable", args=[job.id]), headers=HTMX)
    assert engine.get_job(job.id).recurring is True
    plain = enqueue(engine, qname)
    response = operator_client.post(
        reverse("dashboard:recurring-enable", args=[plain.id]), headers=HTMX
    )
    assert "not a recurring job" in response.content.decode()


def test_without_htmx_an_action_redirects_back_with_a_message(operator_client, engine, qname):
    job = make_dead(engine, qname)
    page = reverse("dashboard:job", args=[job.id])
    response = operator_client.post(
        reverse("dashboard:job-retry", args=[job.id]), {"next": page}, follow=True
    )
    assert response.redirect_chain[-1][0] == page
    assert "queued again" in response.content.decode()


def test_without_htmx_a_foreign_next_is_ignored(operator_client, qname):
    response = operator_client.post(
        reverse("dashboard:pause"), {"queue": qname, "next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("dashboard:overview")
