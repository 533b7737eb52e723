"""Jobs made through the engine on a clock set in the past (so that `manage.py jobs`, on the
real clock, sees them as old), the command run in this process, and every row of the tables
a command may write, to compare before and after."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from queues.api import Job, JobOutcome, JobQueue, MockClock
from queues.models import Batch, FailedAttempt, JobDependency, QueuePause, Workflow
from queues.options import DequeueOptions


def queue_days_ago(days: float) -> JobQueue:
    return JobQueue(clock=MockClock(timezone.now() - timedelta(days=days)))


def finished(queue: JobQueue, name: str, count: int, outcome=None) -> list:
    """`count` jobs of queue `name` run to `outcome` (default: completed)."""
    queue.enqueue_many([Job(queue_name=name, payload={"n": i}) for i in range(count)])
    runs = queue.dequeue(name, DequeueOptions(batch_size=count))
    queue.finish_job_runs([(run, outcome or JobOutcome.completed()) for run in runs])
    return [run.id for run in runs]


def jobs(*args: str) -> tuple[str, str]:
    """`manage.py jobs ARGS` in this process: (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command("jobs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def snapshot() -> dict:
    """Every row of the tables a subcommand may write, in a fixed order."""
    tables = (Job, FailedAttempt, JobDependency, Batch, Workflow, QueuePause)
    return {
        model.__name__: sorted(
            (tuple(str(v) for v in row) for row in model.objects.values_list()), key=str
        )
        for model in tables
    }
