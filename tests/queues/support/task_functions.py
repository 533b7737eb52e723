"""Module-level tasks for the django.tasks contract tests."""

from __future__ import annotations

from django.tasks import task


@task
def noop_task(*args, **kwargs):
    return None


@task
async def noop_task_async(*args, **kwargs):
    return None


@task
def calculate_meaning_of_life():
    return 42


@task
def failing_task_value_error():
    raise ValueError("This task failed due to ValueError")


@task(takes_context=True)
def get_attempt(context, label):
    return {"attempt": context.attempt, "label": label}


@task
def complex_return_value():
    return {"list": (1, 2), "nested": {"ok": True}}


@task(unique=True)
def refresh_feed(feed_id):
    return {"refreshed": feed_id}


@task(tags=["billing", "eu"], meta={"team": "payments"})
def charge(invoice_id):
    return {"charged": invoice_id}
