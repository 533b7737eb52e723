"""Bringing the rows of declared schedules in line with the settings, written once over the
store (`JobQueue.sync_schedules`), in one transaction:

- an entry with no row gets one (a recurring job, its first run the cron's next);
- a row whose entry changed is updated in place: its queue, payload, priority, attempts,
  timeout, tags (its `JobTag` rows too) and meta, and its cron and time zone with its next
  run recomputed (a row Running at the
  time gets its next run from the old expression once, when that run ends);
- a row whose entry is gone is disabled, not deleted (its history stays), and marked
  removed; an entry added back enables its row again;
- a row an operator disabled (dashboard, admin, `disable_recurring_job`) stays disabled: a
  sync updates what it runs but never enables it. Only a row the sync itself disabled, for
  an entry that was gone, is enabled again by it.

Race-free: each row holds its schedule's name by its unique slot (`unique.schedule_slot`),
so ten workers starting at once insert one row per name; and the rows are updated under
their locks, so a sync is idempotent whoever runs it beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from queues.cron import CronSchedule
from queues.enums import JobStatus
from queues.models import Job
from queues.schedules import Schedule
from queues.store import Match


@dataclass
class ScheduleSync:
    """What a sync did, by schedule name."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    enabled: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        def part(what: str, names: list[str]) -> str:
            listed = f" ({', '.join(names)})" if names and what != "unchanged" else ""
            return f"{what} {len(names)}{listed}"

        return ", ".join(part(what, names) for what, names in vars(self).items())


def sync(queue, schedules: list[Schedule]) -> ScheduleSync:
    """Make the declared rows what `schedules` say (see the module's docstring)."""
    report = ScheduleSync()
    now = queue.now()

    def work() -> None:
        jobs = [schedule.job() for schedule in schedules]
        queue._prepare(jobs, now, declared=True)
        duplicates = queue._insert(jobs, now)
        report.created = [job.schedule_name for job in jobs if job.id not in duplicates]
        existing = {
            duplicates[job.id]: schedule
            for job, schedule in zip(jobs, schedules, strict=True)
            if job.id in duplicates
        }
        rows = queue.store.lock_jobs(Match(ids=set(existing))) if existing else []
        for row in sorted(rows, key=lambda row: row.schedule_name):
            _update(queue, row, existing[row.id], now, report)
        _disable_removed(queue, {s.name for s in schedules}, now, report)

    queue._atomic(work)
    return report


def _update(queue, row: Job, schedule: Schedule, now: datetime, report: ScheduleSync) -> None:
    wanted = schedule.definition()
    fields: dict[str, Any] = {k: v for k, v in wanted.items() if getattr(row, k) != v}
    if row.schedule_removed_at is not None:
        # Its entry is back: enabled again, from the cron's next run.
        fields.update(recurring=True, schedule_removed_at=None)
        report.enabled.append(schedule.name)
    elif fields:
        report.updated.append(schedule.name)
    else:
        report.unchanged.append(schedule.name)
        return
    timing = {"cron_schedule", "timezone", "recurring"} & fields.keys()
    if timing and row.status != JobStatus.RUNNING:
        # The next run by the new expression; a Running row's run sets it when it ends.
        next_run = CronSchedule(schedule.cron, schedule.timezone).next_after(now)
        fields["next_run_at"] = next_run
        if row.status == JobStatus.PENDING:
            fields["scheduled_at"] = next_run
    queue.store.update_jobs(Match(ids=[row.id]), fields)
    if {"tags", "queue_name", "priority"} & fields.keys():
        # The tag rows copy the job's queue and priority: rewritten with the row's.
        for name, value in fields.items():
            setattr(row, name, value)
        queue.store.replace_tags(row)


def _disable_removed(queue, names: set[str], now: datetime, report: ScheduleSync) -> None:
    gone = [
        row.id
        for row in queue.store.declared_jobs()
        if row.schedule_name not in names and row.schedule_removed_at is None
    ]
    if not gone:
        return
    # Asked again under the locks: another sync may have disabled them meanwhile.
    locked = queue.store.lock_jobs(Match(ids=gone))
    still = sorted(
        (row for row in locked if row.schedule_removed_at is None),
        key=lambda row: row.schedule_name,
    )
    if still:
        fields = {"recurring": False, "schedule_removed_at": now}
        queue.store.update_jobs(Match(ids=[row.id for row in still]), fields)
        report.disabled = [row.schedule_name for row in still]
