"""What an operator does with a recurring job (`RecurringRuns`, mixed into `JobQueue`): enable
or disable it, run it once now outside its schedule (a one-off copy; the row is left alone),
and see when it runs next. See docs/design/engine.md ("Schedules").
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from queues.cron import CronSchedule
from queues.engine import transitions
from queues.engine.core import QueuePart
from queues.exceptions import InvalidCronSchedule, JobNotFound
from queues.models import Job
from queues.store import Match

#: The key of the copy's meta that holds the id of the recurring row it was run for.
RUN_NOW_OF = "run_now_of"
NEXT_RUNS = 5


class RecurringRuns(QueuePart):
    """`JobQueue`'s actions on recurring jobs."""

    def enable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, True)

    def disable_recurring_job(self, job_id: UUID | str) -> None:
        self._set_recurring(job_id, False)

    def _set_recurring(self, job_id, enabled: bool) -> None:
        def work():
            job = self._locked(job_id)
            transitions.check(transitions.RECURRING, job)
            self.store.update_jobs(Match(ids=[job.id]), {"recurring": enabled})

        self._atomic(work)

    def run_recurring_now(self, job_id: UUID | str, by: str = "") -> UUID:
        """Enqueue one run of the recurring job `job_id` now, outside its schedule; the id
        of the new job. `JobNotFound` for an unknown id, `InvalidJobTransition` for a job
        that is not recurring."""
        row = self._get_or_raise(job_id)
        transitions.check(transitions.RECURRING, row)
        meta = {**(row.meta or {}), RUN_NOW_OF: str(row.id)}
        if by:
            meta["run_now_by"] = by
        # No cron and no unique key: the row holds its key for as long as it recurs, and a
        # copy with it would find it taken and enqueue nothing.
        return self.enqueue(
            Job(
                queue_name=row.queue_name,
                payload=row.payload,
                priority=row.priority,
                max_attempts=row.max_attempts,
                timeout=row.timeout,
                retry_strategy=row.retry_strategy,
                tags=list(row.tags or []),
                meta=meta,
            )
        )

    def _get_or_raise(self, job_id):
        job = self.get_job(job_id)
        if job is None:
            raise JobNotFound(f"no job {job_id}")
        return job


def next_runs(job, after: datetime, count: int = NEXT_RUNS) -> list[datetime]:
    """The next `count` occurrences of `job`'s cron after `after` (UTC), the first being its
    `next_run_at` when that is later; none for a job without a valid cron."""
    if not job.cron_schedule:
        return []
    try:
        schedule = CronSchedule(job.cron_schedule, job.timezone or "UTC")
    except InvalidCronSchedule:
        return []
    runs: list[datetime] = []
    moment = after
    if job.next_run_at is not None and job.next_run_at > after:
        runs.append(job.next_run_at)
        moment = job.next_run_at
    while len(runs) < count:
        moment = schedule.next_after(moment)
        runs.append(moment)
    return runs
