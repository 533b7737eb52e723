"""The Errors page, its retry and the job page's "Why is it waiting?": staff login, the retry's
permission (403) and CSRF, exception messages escaped, junk query strings answered (no 500),
and the overview's and history's pointer at a new group."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from queues.api import JobQueue
from queues.models import BulkOperation
from queues.reads import error_groups
from tests.queues.dashboard.views.conftest import HTMX, enqueue
from tests.queues.reads.test_error_groups import fail

pytestmark = pytest.mark.django_db(transaction=True)
ERRORS = reverse("dashboard:errors")
RETRY = reverse("dashboard:errors-retry")
EVIL = "<script>alert(1)</script> order 12"


def _key(engine) -> str:
    (group,) = [g for g in error_groups.groups(error_groups.WINDOWS["24h"], engine.now()).groups
                if g.exception_class == "app.Evil"]  # fmt: skip
    return group.key


def test_the_page_needs_staff_and_escapes_the_messages(client, viewer_client, qname):
    engine = JobQueue()
    fail(engine, qname, [("app.Evil", EVIL)])
    assert client.get(ERRORS).status_code == 302
    page = viewer_client.get(ERRORS).content.decode()
    assert (
        "&lt;script&gt;alert(&lt;n&gt;)&lt;/script&gt; order &lt;n&gt;" in page
        and "<script>alert" not in page
    )
    assert "app.Evil" in page and "Retry all in this group" not in page, "a viewer may not retry"
    for junk in ("?window=%FF", "?window=1y", "?window[]=x&group=../"):
        assert viewer_client.get(ERRORS + junk).status_code == 200
    assert viewer_client.get(ERRORS + "?window=%00").status_code == 400


def test_the_retry_needs_its_permission_and_csrf_and_starts_a_bulk_operation(
    viewer_client, operator_client, csrf_client, qname
):
    engine = JobQueue()
    fail(engine, qname, [("app.Evil", EVIL), ("app.Evil", "<script>alert(1)</script> order 13")])
    key = _key(engine)
    form = {"window": "24h", "group": key}
    assert viewer_client.post(RETRY, form).status_code == 403
    assert csrf_client.post(RETRY, form).status_code == 403
    assert not BulkOperation.objects.exists()
    page = operator_client.get(ERRORS).content.decode()
    assert "Retry all in this group" in page
    response = operator_client.post(RETRY, form)
    op = BulkOperation.objects.get()
    assert response.status_code == 302 and response.url == reverse(
        "dashboard:bulk-operation", args=[op.pk]
    )
    assert (op.action, op.total, len(op.filter["job_ids"])) == ("retry", 2, 2)
    assert operator_client.post(RETRY, form, headers=HTMX)["HX-Redirect"].startswith("/")
    for junk in ({"group": "nope"}, {"group": "../x", "window": "1y"}, {}):
        answer = operator_client.post(RETRY, junk, headers=HTMX)
        assert answer.status_code == 200 and "No such error group" in answer.content.decode()


def test_the_overview_and_history_point_at_a_new_group(viewer_client, qname):
    fail(JobQueue(), qname, [("app.Evil", EVIL)])
    for page in ("dashboard:overview", "dashboard:history"):
        assert 'id="errors-notice"' in viewer_client.get(reverse(page)).content.decode()
    notice = viewer_client.get(ERRORS, headers={**HTMX, "HX-Target": "errors-notice"})
    text = notice.content.decode()
    assert "new or growing" in text and "app.Evil" in text and "<html" not in text


def test_the_job_page_says_why_a_job_waits(viewer_client, qname):
    engine = JobQueue()
    job = enqueue(engine, qname)
    engine.pause_queue(qname, paused_by="<b>ann</b>", reason="deploy <i>")
    page = viewer_client.get(reverse("dashboard:job", args=[job.id])).content.decode()
    why = page[page.index("Why is it waiting?") :]
    assert 'data-reason="paused"' in why and "&lt;b&gt;ann&lt;/b&gt;" in why and "<b>ann" not in why
    assert 'data-reason="no_worker"' in why and "deploy &lt;i&gt;" in why
    run = engine.dequeue_one(qname) if engine.resume_queue(qname) is None else None
    page = viewer_client.get(reverse("dashboard:job", args=[run.id])).content.decode()
    assert "Why is it waiting?" not in page, "a running job is not waiting"
    assert re.search(r"<h1>.*Running", page, re.S)
