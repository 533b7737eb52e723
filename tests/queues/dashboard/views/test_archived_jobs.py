"""An archived job on the dashboard: its page (marked Archived, read-only, its history, a
Restore button for those who may), the Restore action (permission, CSRF, an unknown id a
404), and the all-queues search finding it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from queues.api import Job, JobOutcome, JobQueue, MockClock
from queues.models import ArchivedJob
from queues.models import Job as Row
from queues.reads.timeline import SHOWN
from tests.queues.dashboard.views.conftest import HTMX, poll
from tests.queues.support.jobs_helpers import finished

pytestmark = pytest.mark.django_db


@pytest.fixture
def archived(qname):
    """A Dead job with one failed attempt (its error holds markup), archived."""
    queue = JobQueue(clock=MockClock())
    queue.enqueue(Job(queue_name=qname, payload={"to": "<b>x</b>"}, max_attempts=1))
    run = queue.dequeue_one(qname)
    queue.finish_job_run(run, JobOutcome.failed("<script>alert(1)</script>"))
    queue.clock.advance(timedelta(days=30))
    assert queue.archive_jobs(timedelta(days=7), queue_name=qname) == 1
    return run.id


def test_the_page_of_an_archived_job_is_marked_read_only_with_its_history(
    operator_client, viewer_client, archived
):
    page = operator_client.get(reverse("dashboard:job", args=[archived]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'class="pill big archived">Archived</span>' in html
    assert 'id="archived-note"' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert 'class="attempt end-' in html  # the history, from the archive
    assert reverse("dashboard:job-restore", args=[archived]) in html
    assert reverse("dashboard:job-retry", args=[archived]) not in html
    # Without the permission: no button.
    html = viewer_client.get(reverse("dashboard:job", args=[archived])).content.decode()
    assert reverse("dashboard:job-restore", args=[archived]) not in html
    # A page that was live when the job went: its poll gets the archived partial.
    polled = operator_client.get(
        reverse("dashboard:job", args=[archived]), headers=poll("job-live")
    )
    assert polled.status_code == 200 and "Archived" in polled.content.decode()


def test_an_unknown_job_is_still_a_404(operator_client):
    missing = "00000000-0000-4000-8000-000000000000"
    assert operator_client.get(reverse("dashboard:job", args=[missing])).status_code == 404


def test_restore_needs_the_permission_and_the_csrf_token(viewer_client, csrf_client, archived):
    url = reverse("dashboard:job-restore", args=[archived])
    assert viewer_client.post(url, headers=HTMX).status_code == 403
    assert csrf_client.post(url, headers=HTMX).status_code == 403
    assert ArchivedJob.objects.filter(id=archived).exists()
    assert not Row.objects.filter(id=archived).exists()


def test_restore_puts_the_job_back_and_goes_to_its_page(operator_client, client, archived):
    url = reverse("dashboard:job-restore", args=[archived])
    assert operator_client.get(url).status_code == 405
    anonymous = client.post(url)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    done = operator_client.post(url, headers=HTMX)
    assert done.status_code == 200
    assert done["HX-Redirect"] == reverse("dashboard:job", args=[archived])
    assert Row.objects.get(id=archived).status == "Dead"
    assert not ArchivedJob.objects.filter(id=archived).exists()
    assert operator_client.post(url, headers=HTMX).status_code == 404  # restored already
    unknown = reverse("dashboard:job-restore", args=["00000000-0000-4000-8000-000000000000"])
    assert operator_client.post(unknown).status_code == 404


def test_the_search_finds_archived_jobs_by_id_and_by_queue(operator_client, archived, qname):
    jobs = reverse("dashboard:jobs")
    by_id = operator_client.get(jobs, {"id": str(archived)}).content.decode()
    assert 'id="archived-matches"' in by_id and str(archived)[:8] in by_id
    by_queue = operator_client.get(jobs, {"queue": qname, "status": "Dead"}).content.decode()
    assert 'id="archived-matches"' in by_queue and str(archived)[:8] in by_queue
    other = operator_client.get(jobs, {"queue": qname, "status": "Completed"}).content.decode()
    assert 'id="archived-matches"' not in other
    text = operator_client.get(jobs, {"queue": qname, "q": "x"}).content.decode()
    assert 'id="archived-matches"' not in text  # the payload is packed: not searched


def test_a_live_job_with_the_queues_archived_ones(operator_client, engine, qname, archived):
    (live,) = finished(engine, qname, 1)
    html = operator_client.get(reverse("dashboard:jobs"), {"queue": qname}).content.decode()
    assert str(live)[:8] in html and str(archived)[:8] in html


def test_the_admin_lists_and_shows_archived_jobs(superuser_client, archived):
    listing = superuser_client.get(reverse("admin:queues_archivedjob_changelist"))
    assert listing.status_code == 200 and str(archived) in listing.content.decode()
    one = superuser_client.get(reverse("admin:queues_archivedjob_change", args=[archived]))
    assert one.status_code == 200 and "Dead" in one.content.decode()


def test_an_archived_job_with_a_long_history_shows_the_newest_attempts(operator_client, qname):
    queue = JobQueue(clock=MockClock())
    job_id = queue.enqueue(Job(queue_name=qname, max_attempts=SHOWN + 3))
    for attempt in range(1, SHOWN + 4):
        queue.retry_job(job_id)  # due now, whatever the backoff
        run = queue.dequeue_one(qname)
        queue.finish_job_run(run, JobOutcome.failed(f"failure number {attempt}"))
    queue.clock.advance(timedelta(days=30))
    assert queue.archive_jobs(timedelta(days=7), queue_name=qname) == 1
    html = operator_client.get(reverse("dashboard:job", args=[job_id])).content.decode()
    assert html.count('class="attempt end-') == SHOWN
    assert f"failure number {SHOWN + 3}<" in html and "failure number 3<" not in html
    assert "3 older attempts not shown" in html
