"""The all-queues jobs page and "retry / cancel / delete all matching": login, permissions
(403), CSRF, escaping, junk input as messages, keyset pages and the bounded scan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from queues.api import Job, JobStatus
from queues.models import BulkOperation
from queues.models import Job as JobRow
from queues.ops import bulk
from queues.reads import search_page
from queues.reads.search import SearchFilter
from queues.reads.search_page import search_jobs
from tests.queues.dashboard.views.conftest import HTMX, enqueue, make_dead

pytestmark = pytest.mark.django_db
JOBS = reverse("dashboard:jobs")
CONFIRM = reverse("dashboard:bulk-confirm")
START = reverse("dashboard:bulk-start")


def test_the_jobs_page_needs_a_staff_login(client, viewer_client, engine, qname):
    assert client.get(JOBS).status_code == 302
    enqueue(engine, qname, payload={"order": 7})
    page = viewer_client.get(JOBS)
    assert page.status_code == 200 and qname in page.content.decode()
    # A viewer is offered no "all matching" button.
    assert "Retry all" not in page.content.decode()


def test_the_jobs_page_filters_every_way(operator_client, engine, qname):
    other = qname + "-b"
    a = enqueue(engine, qname, payload={"order": "A-1"}, tags=["eu"])
    b = make_dead(engine, other, payload={"order": "B-2"})
    engine.retry_job(b.id)
    engine.cancel_job(b.id, "card declined <b>")
    cases = {
        "id": ({"id": str(a.id)}, [a.id]),
        "queue": ({"queue": other}, [b.id]),
        "status": ({"status": JobStatus.FAILED, "queue": other}, [b.id]),
        "priority": ({"priority": "2", "queue": qname}, [a.id]),
        "tag": ({"tag": "eu", "queue": qname}, [a.id]),
        "payload": ({"q": "a-1"}, [a.id]),
        "error": ({"error": "DECLINED"}, [b.id]),
        "created": ({"created_from": "2000-01-01T00:00", "queue": qname}, [a.id]),
        "created before": ({"created_to": "2000-01-01T00:00", "queue": qname}, []),
        "finished": ({"finished_from": "2000-01-01T00:00", "q": "B-2"}, [b.id]),
    }
    for name, (params, expected) in cases.items():
        page = search_jobs(SearchFilter.from_query(params))
        assert [job.id for job in page.jobs] == expected, name
        response = operator_client.get(JOBS, params)
        assert response.status_code == 200, name


@pytest.mark.parametrize(
    "params, message",
    [
        ({"id": "not-a-uuid"}, "not a UUID"),
        ({"created_from": "yesterday"}, "is not a time"),
        ({"finished_to": "99999-01-01T00:00"}, "is not a time"),
        ({"q": "x" * 5000}, "at most 200 characters"),
        ({"error": "y" * 201}, "at most 200 characters"),
        ({"status": "Sleeping"}, "Status is one of"),
        ({"priority": "9"}, "Priority is a number"),
        ({"tag": "a\u200bb"}, "No job can have that tag"),
        ({"queue": "q" * 300}, "No queue can have"),
    ],
)
def test_junk_input_is_a_message_never_a_500(viewer_client, engine, qname, params, message):
    enqueue(engine, qname)
    response = viewer_client.get(JOBS, params)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert qname not in response.content.decode()  # a filter with a problem matches nothing


def test_a_nul_character_is_a_400(viewer_client):
    assert viewer_client.get(JOBS, {"q": "a\x00b"}).status_code == 400


def test_payloads_errors_and_filters_are_escaped(operator_client, engine, qname):
    job = make_dead(engine, qname, payload={"html": "<script>alert(1)</script>"})
    engine.cancel_job(engine.enqueue(Job(queue_name=qname)), "<script>bad()</script>")
    body = operator_client.get(JOBS, {"q": "<script>"}).content.decode()
    assert "<script>alert" not in body and "&lt;script&gt;" in body
    body = operator_client.get(JOBS, {"error": "<script>"}).content.decode()
    assert "<script>bad" not in body
    confirm = operator_client.post(CONFIRM, {"action": "retry", "q": "<script>"}, headers=HTMX)
    assert (
        "<script>" not in confirm.content.decode() and "&lt;script&gt;" in confirm.content.decode()
    )
    assert job.id


def test_pages_are_keyset_and_a_scan_says_how_far_it_looked(engine, qname, monkeypatch):
    ids = [engine.enqueue(Job(queue_name=qname, payload={"n": i})) for i in range(7)]
    rows = JobRow.objects.filter(queue_name=qname).order_by("-created_at", "-id")
    newest_first = list(rows.values_list("id", flat=True))
    assert set(newest_first) == set(ids)
    flt = SearchFilter.from_query({"queue": qname})
    seen, cursor = [], ""
    monkeypatch.setattr(search_page, "SCAN_WINDOW", 1_000_000)
    while True:
        page = search_jobs(flt, cursor, size=3)
        seen += [job.id for job in page.jobs]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert seen == newest_first
    # A window of 2 rows: each page reads at most 2, says so, and goes on from there.
    monkeypatch.setattr(search_page, "SCAN_WINDOW", 2)
    monkeypatch.setattr(search_page, "MYSQL_SCAN_WINDOW", 2)
    odd = SearchFilter.from_query({"queue": qname, "q": '"n": 1'})
    first = search_jobs(odd)
    assert first.scanned == 2 and first.jobs == [] and first.next_cursor
    found, cursor = [], ""
    for _ in range(10):
        page = search_jobs(odd, cursor)
        found += [job.id for job in page.jobs]
        cursor = page.next_cursor
        if not cursor:
            break
    assert found == [ids[1]]


def test_confirm_and_start_need_the_actions_permission_and_csrf(
    viewer_client, csrf_client, operator_client, engine, qname
):
    make_dead(engine, qname)
    form = {"action": "retry", "queue": qname, "status": JobStatus.DEAD}
    assert viewer_client.post(CONFIRM, form).status_code == 403
    assert viewer_client.post(START, form).status_code == 403
    assert csrf_client.post(CONFIRM, form).status_code == 403
    assert csrf_client.post(START, form).status_code == 403
    assert Client().post(START, form).status_code == 302  # to the login
    assert not BulkOperation.objects.exists()
    confirm = operator_client.post(CONFIRM, form, headers=HTMX)
    body = confirm.content.decode()
    assert confirm.status_code == 200 and 'class="bulk-count">1<' in body
    assert 'name="status" value="Dead"' in body


def test_delete_all_needs_the_delete_permission(operator, engine, qname):
    make_dead(engine, qname)
    operator.user_permissions.remove(Permission.objects.get(codename="delete_job"))
    client = Client()
    client.force_login(operator)
    form = {"action": "delete", "queue": qname}
    assert client.post(START, form).status_code == 403
    assert client.post(START, {**form, "action": "retry"}, headers=HTMX).status_code == 200


def test_start_writes_the_operation_and_answers_its_progress(operator_client, engine, qname):
    make_dead(engine, qname)
    make_dead(engine, qname)
    form = {"action": "retry", "queue": qname, "status": JobStatus.DEAD}
    response = operator_client.post(START, form, headers=HTMX)
    op = BulkOperation.objects.get()
    assert (op.action, op.total, op.created_by, op.status) == ("retry", 2, "operator", "pending")
    body = response.content.decode()
    assert reverse("dashboard:bulk-operation", args=[op.pk]) in body and "every 1s" in body
    bulk.BulkRunner(engine).run_once()
    done = operator_client.get(reverse("dashboard:bulk-operation", args=[op.pk]), headers=HTMX)
    assert "Done: 2 of 2 jobs retried" in done.content.decode()
    assert "every 1s" not in done.content.decode()  # finished: it stops polling
    # Without htmx: a redirect to the operation's page, which is a whole page.
    again = operator_client.post(START, form)
    assert again.status_code == 302
    assert operator_client.get(again.url).status_code == 200


def test_bad_actions_and_filters_are_messages(operator_client):
    response = operator_client.post(CONFIRM, {"action": "explode"}, headers=HTMX)
    assert response.status_code == 200 and "Choose retry" in response.content.decode()
    response = operator_client.post(START, {"action": "retry", "id": "zzz"}, headers=HTMX)
    assert "not a UUID" in response.content.decode()
    assert not BulkOperation.objects.exists()


def test_cancel_needs_the_permission_and_csrf(
    viewer_client, csrf_client, operator_client, engine, qname
):
    make_dead(engine, qname)
    op = bulk.start(SearchFilter.from_query({"queue": qname}), "retry", "operator")
    url = reverse("dashboard:bulk-cancel", args=[op.pk])
    assert viewer_client.post(url).status_code == 403
    assert csrf_client.post(url).status_code == 403
    assert viewer_client.get(reverse("dashboard:bulk-operation", args=[op.pk])).status_code == 200
    response = operator_client.post(url, headers=HTMX)
    op.refresh_from_db()
    assert op.status == "cancelled" and "Cancelled after 0" in response.content.decode()
    assert operator_client.post(reverse("dashboard:bulk-cancel", args=[999999])).status_code == 404


def test_the_queue_page_offers_all_matching_with_its_filter(
    operator_client, viewer_client, engine, qname
):
    make_dead(engine, qname)
    url = reverse("dashboard:queue", args=[qname])
    body = operator_client.get(url, {"status": "Dead", "tag": "x"}).content.decode()
    assert "Retry all" in body and f'name="fixed_queue" value="{qname}"' in body
    assert 'name="status" value="Dead"' in body and 'name="tag" value="x"' in body
    assert "Retry all" not in viewer_client.get(url).content.decode()
    form = {"action": "retry", "fixed_queue": qname, "status": "Dead", "queue": "ignored"}
    confirm = operator_client.post(CONFIRM, form, headers=HTMX)
    assert 'class="bulk-count">1<' in confirm.content.decode()


def test_the_admin_lists_operations_read_only(superuser_client, engine, qname):
    op = bulk.start(SearchFilter.from_query({"q": "<script>x</script>"}), "delete", "root")
    changelist = superuser_client.get(reverse("admin:queues_bulkoperation_changelist"))
    assert changelist.status_code == 200
    detail = superuser_client.get(reverse("admin:queues_bulkoperation_change", args=[op.pk]))
    assert detail.status_code == 200 and "<script>x" not in detail.content.decode()
    assert superuser_client.get(reverse("admin:queues_bulkoperation_add")).status_code == 403


def test_times_are_read_as_utc():
    flt = SearchFilter.from_query(
        {"created_from": "2026-12-01T14:30", "created_to": "2026-12-01T16:30+01:00"}
    )
    assert datetime.fromisoformat(flt.created_from) == datetime(2026, 12, 1, 14, 30, tzinfo=UTC)
    assert datetime.fromisoformat(flt.created_to) - datetime.fromisoformat(
        flt.created_from
    ) == timedelta(hours=1)
