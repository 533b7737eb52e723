"""Users and jobs for the dashboard tests: a viewer (staff, no permission), an operator
(staff with the permissions the actions need) and a non-staff user."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from queues.api import Job, JobQueue
from tests.conftest import unique_queue

OPERATOR_PERMISSIONS = [
    "add_job",
    "change_job",
    "delete_job",
    "change_queuepause",
    "change_queueconfig",
]


def _user(username: str, staff: bool, permissions=()) -> User:
    user = User.objects.create_user(username, is_staff=staff)  # force_login: no hashing
    user.user_permissions.set(Permission.objects.filter(codename__in=permissions))
    return user


@pytest.fixture
def viewer(db) -> User:
    return _user("viewer", staff=True)


@pytest.fixture
def operator(db) -> User:
    return _user("operator", staff=True, permissions=OPERATOR_PERMISSIONS)


@pytest.fixture
def viewer_client(viewer) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def operator_client(operator) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def csrf_client(operator) -> Client:
    """An operator whose POSTs must carry a CSRF token, as a browser's do."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    return client


@pytest.fixture
def qname() -> str:
    return unique_queue("dash")


def enqueue(engine: JobQueue, queue: str, **fields) -> Job:
    job = Job(queue_name=queue, payload=fields.pop("payload", {"to": "a@b.c"}), **fields)
    engine.enqueue(job)
    return engine.get_job(job.id)


def make_dead(engine: JobQueue, queue: str, **fields) -> Job:
    job = enqueue(engine, queue, **fields)
    engine.mark_job_dead(job.id, "boom")
    return engine.get_job(job.id)


HTMX = {"HX-Request": "true"}


def poll(target: str) -> dict[str, str]:
    """The headers of an htmx poll of the live region `target`."""
    return {**HTMX, "HX-Target": target}
