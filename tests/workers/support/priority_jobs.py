"""A task for the runworker test of Django's priorities: it appends its name to a file, so
the file holds the order in which the worker ran the tasks."""

from __future__ import annotations

from django.tasks import task

PRIORITIES = "pr_tasks"


@task(queue_name=PRIORITIES)
def appends(path: str, name: str) -> None:
    with open(path, "a") as out:
        out.write(name + "\n")
