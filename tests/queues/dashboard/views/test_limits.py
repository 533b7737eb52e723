"""Queue limits in the dashboard and the admin: the queue page shows the limit, those with
the permission set or remove it through the engine, and a bad value is a message that
changes nothing (never a 500)."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from queues.api import DequeueOptions
from queues.models import QueueConfig
from tests.queues.dashboard.views.conftest import HTMX, enqueue

pytestmark = pytest.mark.django_db


def _set(client, name: str, value: str):
    return client.post(
        reverse("dashboard:limit"), {"queue": name, "max_running": value}, headers=HTMX
    )


def test_the_queue_page_shows_the_limit_and_how_many_run(operator_client, engine, qname):
    for _ in range(3):
        enqueue(engine, qname)
    engine.queue_config(qname, max_running=2, updated_by="alice")
    engine.dequeue(qname, DequeueOptions.batch(3))
    html = operator_client.get(reverse("dashboard:queue", args=[qname])).content.decode()
    assert "2 of at most 2 running" in html and "Set by alice" in html
    assert 'name="max_running"' in html and 'value="2"' in html


def test_a_queue_with_a_limit_and_no_jobs_has_a_page(operator_client, engine, qname):
    engine.queue_config(qname, max_running=4)
    page = operator_client.get(reverse("dashboard:queue", args=[qname]))
    assert page.status_code == 200 and "0 of at most 4 running" in page.content.decode()


def test_the_form_is_for_those_who_may_change_limits(viewer_client, engine, qname):
    enqueue(engine, qname)
    engine.queue_config(qname, max_running=5)
    html = viewer_client.get(reverse("dashboard:queue", args=[qname])).content.decode()
    assert 'name="max_running"' not in html
    assert "At most 5 jobs of this queue run at once" in html


def test_an_operator_sets_and_removes_the_limit(operator_client, engine, qname):
    enqueue(engine, qname)
    response = _set(operator_client, qname, " 3 ")
    assert response.status_code == 200 and "at most 3 jobs run at once" in response.content.decode()
    config = engine.queue_config(qname)
    assert (config.max_running, config.updated_by) == (3, "operator")
    response = _set(operator_client, qname, "")
    assert "has no limit" in response.content.decode()
    assert engine.queue_config(qname).max_running is None


@pytest.mark.parametrize("bad", ["0", "-2", "1.5", "three", "99999999999"])
def test_a_bad_limit_is_a_message_and_changes_nothing(operator_client, engine, qname, bad):
    engine.queue_config(qname, max_running=2)
    response = _set(operator_client, qname, bad)
    assert response.status_code == 200
    assert "max_running must be a whole number" in response.content.decode()
    assert engine.queue_config(qname).max_running == 2


def test_a_bad_queue_name_is_a_message(operator_client):
    response = _set(operator_client, " ", "3")
    assert response.status_code == 200 and "queue name" in response.content.decode()
    assert not QueueConfig.objects.exists()


def test_the_admin_sets_the_limit_through_the_engine(superuser_client, engine, qname):
    response = superuser_client.post(
        reverse("admin:queues_queueconfig_add"), {"queue_name": qname, "max_running": "4"}
    )
    assert response.status_code == 302
    config = engine.queue_config(qname)
    assert (config.max_running, config.updated_by) == (4, "root")
    superuser_client.post(
        reverse("admin:queues_queueconfig_change", args=[quote(qname)]), {"max_running": ""}
    )
    assert engine.queue_config(qname).max_running is None
    assert superuser_client.get(reverse("admin:queues_queueconfig_changelist")).status_code == 200


@pytest.mark.parametrize("bad", ["0", "-1", "x", "2000000"])
def test_the_admin_refuses_a_bad_limit(superuser_client, qname, bad):
    response = superuser_client.post(
        reverse("admin:queues_queueconfig_add"), {"queue_name": qname, "max_running": bad}
    )
    assert response.status_code == 200 and "errornote" in response.content.decode()
    assert not QueueConfig.objects.filter(queue_name=qname).exists()


def test_the_admin_needs_the_permission_and_never_deletes(engine, qname):
    engine.queue_config(qname, max_running=2)
    looker = User.objects.create_user("looker", is_staff=True)
    looker.user_permissions.set(Permission.objects.filter(codename="view_queueconfig"))
    client = Client()
    client.force_login(looker)
    url = reverse("admin:queues_queueconfig_change", args=[quote(qname)])
    assert client.get(url).status_code == 200, "it may look"
    assert client.post(url, {"max_running": "9"}).status_code == 403
    assert engine.queue_config(qname).max_running == 2
    delete = reverse("admin:queues_queueconfig_delete", args=[quote(qname)])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert QueueConfig.objects.filter(queue_name=qname).exists()
