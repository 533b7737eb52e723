"""Bringing the rows of declared schedules in line with the settings (`DeclaredSchedules`,
mixed into `JobQueue`): created, updated in place, the removed ones disabled, in one
transaction, race-free and idempotent whoever runs it beside it. What a sync does to each
row, and why, is in docs/design/engine.md ("Schedules").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from queues.cron import CronSchedule
from queues.engine.core import QueuePart
from queues.enums import JobStatus
from queues.models import Job
from queues.schedules import Schedule, declared
from queues.store import Match, Store


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


class DeclaredSchedules(QueuePart):
    """`JobQueue`'s sync of the schedules declared in settings."""

    def sync_schedules(self, schedules: Iterable[Schedule] | None = None) -> ScheduleSync:
        """Bring the rows of declared schedules in line with `schedules` (default: those of
        `HAMMERWEB["SCHEDULES"]`): created, updated in place, the removed ones disabled."""
        schedules = declared() if schedules is None else list(schedules)
        report = ScheduleSync()
        now = self.now()
        store = self.store

        def work() -> None:
            jobs = [schedule.job() for schedule in schedules]
            self._prepare(jobs, now, declared=True)
            # Each row holds its schedule's name by its unique slot: of ten workers starting
            # at once, one inserts it, the others find it here.
            duplicates = self._insert(jobs, now)
            report.created = [job.schedule_name for job in jobs if job.id not in duplicates]
            existing = {
                duplicates[job.id]: schedule
                for job, schedule in zip(jobs, schedules, strict=True)
                if job.id in duplicates
            }
            rows = store.lock_jobs(Match(ids=set(existing))) if existing else []
            for row in sorted(rows, key=lambda row: row.schedule_name):
                _update(store, row, existing[row.id], now, report)
            _disable_removed(store, {s.name for s in schedules}, now, report)

        self._atomic(work)
        return report


def _update(
    store: Store, row: Job, schedule: Schedule, now: datetime, report: ScheduleSync
) -> None:
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
    store.update_jobs(Match(ids=[row.id]), fields)
    if {"tags", "queue_name", "priority"} & fields.keys():
        # The tag rows copy the job's queue and priority: rewritten with the row's.
        for name, value in fields.items():
            setattr(row, name, value)
        store.replace_tags(row)


def _disable_removed(store: Store, names: set[str], now: datetime, report: ScheduleSync) -> None:
    gone = [
        row.id
        for row in store.declared_jobs()
        if row.schedule_name not in names and row.schedule_removed_at is None
    ]
    if not gone:
        return
    # Asked again under the locks: another sync may have disabled them meanwhile.
    locked = store.lock_jobs(Match(ids=gone))
    still = sorted(
        (row for row in locked if row.schedule_removed_at is None),
        key=lambda row: row.schedule_name,
    )
    if still:
        fields = {"recurring": False, "schedule_removed_at": now}
        store.update_jobs(Match(ids=[row.id for row in still]), fields)
        report.disabled = [row.schedule_name for row in still]
