"""A django.tasks sample: `add.enqueue(2, 3)` makes a job that `runworker default` runs."""

from __future__ import annotations

from django.tasks import task


@task
def add(a: int, b: int) -> int:
    return a + b
