"""django.tasks tasks as unique jobs: `@task(unique=True)` (a key from the task and its
arguments) and `.using(unique_key=...)` on Hammerweb's backend."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.tasks import task_backends
from django.tasks.base import TaskResultStatus
from django.tasks.signals import task_enqueued

import tests.queues.support.task_functions as tasks
from queues.api import Job, JobOutcome, JobQueue, JobStatus
from queues.tasks_backend import HammerwebTask
from tests.queues.conftest import unique_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued():
    seen: list[str] = []

    def receiver(sender, task_result, **kwargs):
        seen.append(task_result.id)

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def test_the_backend_builds_its_own_tasks():
    assert task_backends["default"].task_class is HammerwebTask
    assert isinstance(tasks.noop_task, HammerwebTask) and tasks.refresh_feed.unique


def test_an_equal_call_while_one_is_live_enqueues_nothing(enqueued):
    first = tasks.refresh_feed.enqueue(7)
    again = tasks.refresh_feed.enqueue(7)
    other = tasks.refresh_feed.enqueue(8)
    assert again.id == first.id and other.id != first.id
    assert enqueued == [first.id, other.id], "a duplicate sends no task_enqueued"
    assert again.status == TaskResultStatus.READY and again.args == [7]
    assert Job.objects.filter(unique_key__isnull=False).count() == 2
    key = JobQueue().get_job(first.id).unique_key
    assert "tests.queues.support.task_functions.refresh_feed" in key and "[7]" in key


def test_a_finished_task_frees_its_key():
    queue = JobQueue()
    first = tasks.refresh_feed.enqueue(7)
    queue.finish_job_run(queue.dequeue_one("default"), JobOutcome.completed({"ok": 1}))
    again = tasks.refresh_feed.enqueue(7)
    assert again.id != first.id


def test_using_gives_a_key_a_scope_and_a_period():
    name = unique_queue("task_unique")
    invoice = tasks.noop_task.using(
        queue_name=name,
        unique_key="invoice:42",
        unique_statuses=[JobStatus.PENDING],
        unique_period=timedelta(minutes=5),
    )
    assert isinstance(invoice, HammerwebTask) and invoice.queue_name == name
    first = invoice.enqueue(1)
    assert invoice.enqueue(2).id == first.id, "the key, not the arguments, decides"
    job = JobQueue().get_job(first.id)
    assert (job.unique_key, job.unique_statuses) == ("invoice:42", ["Pending"])
    assert job.unique_period == timedelta(minutes=5)
    assert tasks.noop_task.enqueue(1).id != first.id, "a plain task is never a duplicate"
    assert invoice.using(priority=10).unique_key == "invoice:42", "using keeps the key"


def test_a_duplicate_of_a_plain_job_answers_with_that_job():
    name = unique_queue("task_unique_plain")
    holder = JobQueue().enqueue(Job(queue_name=name, unique_key="shared"))
    result = tasks.noop_task.using(queue_name=name, unique_key="shared").enqueue()
    assert result.id == str(holder) and result.task.func is tasks.noop_task.func
    assert result.args == [] and result.status == TaskResultStatus.READY


def test_a_unique_task_is_rebuilt_with_its_key():
    # What pickling a Task does (Task.__reduce__): the class's fields, the function by path.
    invoice = tasks.noop_task.using(unique_key="invoice:42", unique_period=timedelta(hours=1))
    rebuild, args = invoice.__reduce__()
    assert rebuild(*args) == invoice
