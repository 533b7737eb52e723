"""Queue rates in the dashboard and the admin, beside the limit: the queue page shows the
rate, those with the permission set or remove it through the engine, and a bad value is a
message (or a form error) that changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from queues.models import QueueConfig
from tests.queues.dashboard.views.conftest import HTMX, enqueue

pytestmark = pytest.mark.django_db


def _set(client, name: str, jobs: str, seconds: str, max_running: str = ""):
    fields = {"queue": name, "max_running": max_running, "rate_jobs": jobs, "rate_seconds": seconds}
    return client.post(reverse("dashboard:limit"), fields, headers=HTMX)


def test_the_queue_page_shows_the_rate(operator_client, viewer_client, engine, qname):
    enqueue(engine, qname)
    engine.queue_config(qname, rate=(100, 60), updated_by="alice")
    html = operator_client.get(reverse("dashboard:queue", args=[qname])).content.decode()
    assert "at most 100 started per 60 s" in html
    assert 'name="rate_jobs"' in html and 'value="100"' in html and 'value="60"' in html
    seen = viewer_client.get(reverse("dashboard:queue", args=[qname])).content.decode()
    assert 'name="rate_jobs"' not in seen
    assert "At most 100 jobs of this queue start in each 60 s" in seen


def test_a_queue_with_only_a_rate_and_no_jobs_has_a_page(operator_client, engine, qname):
    engine.queue_config(qname, rate=(5, 1))
    assert operator_client.get(reverse("dashboard:queue", args=[qname])).status_code == 200


def test_an_operator_sets_and_removes_the_rate_with_the_limit(operator_client, engine, qname):
    enqueue(engine, qname)
    response = _set(operator_client, qname, " 10 ", "0.5", max_running="3")
    text = response.content.decode()
    assert response.status_code == 200 and "At most 10 jobs start in each 0.5 s" in text
    config = engine.queue_config(qname)
    assert (config.max_running, config.rate, config.updated_by) == (3, (10, 0.5), "operator")
    response = _set(operator_client, qname, "", "", max_running="3")
    assert "No rate." in response.content.decode()
    assert engine.queue_config(qname).rate is None and engine.queue_config(qname).max_running == 3


def test_the_limit_form_without_rate_fields_keeps_the_rate(operator_client, engine, qname):
    engine.queue_config(qname, rate=(7, 60))
    operator_client.post(
        reverse("dashboard:limit"), {"queue": qname, "max_running": "2"}, headers=HTMX
    )
    assert engine.queue_config(qname).rate == (7, 60.0)


@pytest.mark.parametrize(
    ("jobs", "seconds"),
    [
        ("0", "60"),
        ("-1", "60"),
        ("1.5", "60"),
        ("ten", "60"),
        ("10", ""),
        ("", "60"),
        ("10", "0"),
        ("10", "nan"),
        ("10", "inf"),
        ("10", "1e12"),
        ("9999999", "60"),
    ],
)
def test_a_bad_rate_is_a_message_and_changes_nothing(operator_client, engine, qname, jobs, seconds):
    engine.queue_config(qname, max_running=2, rate=(5, 60))
    response = _set(operator_client, qname, jobs, seconds, max_running="4")
    assert response.status_code == 200 and "rate" in response.content.decode()
    config = engine.queue_config(qname)
    assert (config.max_running, config.rate) == (2, (5, 60.0))


def test_the_admin_sets_and_refuses_a_rate(superuser_client, engine, qname):
    add = reverse("admin:queues_queueconfig_add")
    bad = superuser_client.post(add, {"queue_name": qname, "rate_limit": "5", "rate_period": ""})
    assert bad.status_code == 200 and "errornote" in bad.content.decode()
    assert not QueueConfig.objects.filter(queue_name=qname).exists()
    good = superuser_client.post(add, {"queue_name": qname, "rate_limit": "5", "rate_period": "2"})
    assert good.status_code == 302
    assert engine.queue_config(qname).rate == (5, 2.0)
    change = reverse("admin:queues_queueconfig_change", args=[quote(qname)])
    superuser_client.post(change, {"max_running": "3", "rate_limit": "", "rate_period": ""})
    config = engine.queue_config(qname)
    assert (config.max_running, config.rate) == (3, None)
