"""`/metrics/` and `/healthz`: who may scrape (a staff session or the bearer token), what a
scrape reads and what it costs, the web side's health."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from queues.api import Job, JobPriority, JobQueue
from queues.enums import DependencyStatus
from queues.reads import stats
from tests.conftest import unique_queue
from tests.workers.support.probe_client import samples, value

pytestmark = pytest.mark.django_db
TOKEN = "a-long-random-token"
WITH_TOKEN = override_settings(HAMMERWEB={"METRICS_TOKEN": TOKEN})


def scrape(client: Client, **headers):
    return client.get("/metrics/", headers=headers)


def test_anonymous_gets_401_and_a_non_staff_user_403(client, django_user_model):
    response = scrape(client)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    client.force_login(django_user_model.objects.create_user("visitor", is_staff=False))
    assert scrape(client).status_code == 403


def test_staff_gets_the_metrics(viewer_client):
    response = scrape(viewer_client)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert value(samples(response.content.decode()), "hammerweb_workers_alive") == 0


@WITH_TOKEN
def test_the_token_opens_the_metrics_and_a_wrong_one_does_not(client):
    assert scrape(client, authorization=f"Bearer {TOKEN}").status_code == 200
    assert scrape(client, authorization=f"bearer {TOKEN}").status_code == 200
    for wrong in (f"Bearer {TOKEN}x", "Bearer ", f"Basic {TOKEN}", TOKEN):
        assert scrape(client, authorization=wrong).status_code == 401, wrong


def test_without_a_token_set_no_bearer_is_accepted(client):
    assert scrape(client, authorization="Bearer ").status_code == 401
    assert scrape(client, authorization="Bearer None").status_code == 401


@WITH_TOKEN
def test_a_wrong_token_is_refused_even_beside_a_staff_session(viewer_client):
    assert scrape(viewer_client, authorization="Bearer nope").status_code == 401
    assert scrape(viewer_client).status_code == 200  # the session alone suffices


def test_metrics_refuse_a_post(viewer_client):
    assert viewer_client.post("/metrics/").status_code == 405


def test_healthz_answers_while_the_database_does(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.content == b"ok\n"


def test_a_scrape_reads_the_counts_and_the_oldest_due_job(viewer_client):
    name, now = unique_queue("probe"), timezone.now()
    queue = JobQueue()
    # Enqueued first, waiting longest (a low priority does not hide it), then a newer one
    # and one not due for an hour.
    for priority, due in ((JobPriority.LOW, -90), (JobPriority.CRITICAL, -30), (None, 3600)):
        extra = {"priority": priority} if priority is not None else {}
        queue.enqueue(Job(queue_name=name, payload={}, **extra,
                          scheduled_at=now + timedelta(seconds=due)))
    parsed = samples(scrape(viewer_client).content.decode())
    assert value(parsed, "hammerweb_jobs", queue=name, status="Pending") == 3
    assert value(parsed, "hammerweb_jobs", queue=name, status="Completed") == 0
    assert 90 <= value(parsed, "hammerweb_queue_oldest_due_seconds", queue=name) < 150


def test_oldest_due_passes_over_jobs_not_due_and_jobs_waiting_on_others():
    name, now = unique_queue("due"), timezone.now()
    queue = JobQueue()
    queue.enqueue(Job(queue_name=name, payload={}, scheduled_at=now + timedelta(minutes=5)))
    waiting = queue.enqueue(Job(queue_name=name, payload={},
                                scheduled_at=now - timedelta(hours=2)))
    Job.objects.filter(id=waiting).update(dependency_status=DependencyStatus.WAITING)
    first = queue.enqueue(Job(queue_name=name, payload={}, scheduled_at=now - timedelta(hours=1)))
    queue.enqueue(Job(queue_name=name, payload={}, scheduled_at=now - timedelta(minutes=1)))
    assert stats.oldest_due([name], now) == {name: Job.objects.get(id=first).scheduled_at}
    assert stats.oldest_due([name], now - timedelta(hours=3)) == {}


def test_a_scrape_is_four_statements_whatever_the_queues(viewer_client):
    queue = JobQueue()
    for _ in range(4):
        queue.enqueue(Job(queue_name=unique_queue("many"), payload={}))
    with CaptureQueriesContext(connection) as queries:
        assert scrape(viewer_client).status_code == 200
    # Beside the session's own reads: the counts, the oldest due jobs (one UNION ALL where
    # the database allows, else a read per queue and claimable dependency state), the
    # minute, the workers.
    ours = [q for q in queries if "queues_" in q["sql"]]
    per_queue = 1 if connection.features.supports_slicing_ordering_in_compound else 4 * 2
    assert len(ours) == 3 + per_queue, [q["sql"][:80] for q in ours]
