"""Read-only queries behind the dashboard. Every write goes through `JobQueue`; this module
only reads. Counts come from the trigger-kept `JobCount` rows (`queues.counts`), never from a
COUNT(*) of the jobs table; every other query is bounded by an index and a LIMIT, so the
pages stay fast on a table of a million jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Case, Count, Q, Value, When
from django.db.models.functions import Substr, TruncMinute
from django.utils import timezone

from .counts import counts_by_queue
from .enums import JobStatus
from .models import Job, QueuePause, ReaperRun, WorkerProcess

#: The statuses shown as columns, in the order of a job's life.
STATUS_COLUMNS = [
    JobStatus.PENDING,
    JobStatus.RUNNING,
    JobStatus.COMPLETED,
    JobStatus.FAILED,
    JobStatus.DEAD,
    JobStatus.TIMED_OUT,
]
SPARK_MINUTES = 30
#: A worker whose heartbeat is older than this is shown as stale.
WORKER_STALE_AFTER = timedelta(seconds=60)


@dataclass
class QueueRow:
    name: str
    counts: dict[str, int] = field(default_factory=dict)
    last_minute: int = 0
    spark: list[int] = field(default_factory=lambda: [0] * SPARK_MINUTES)
    oldest_pending_at: datetime | None = None
    pause: QueuePause | None = None

    @property
    def status_cells(self) -> list[tuple[str, int]]:
        return [(s.value, self.counts.get(s.value, 0)) for s in STATUS_COLUMNS]


@dataclass
class Overview:
    queues: list[QueueRow]
    last_minute: int
    workers_alive: int

    @property
    def total_cells(self) -> list[tuple[str, int]]:
        return [(s.value, sum(q.counts.get(s.value, 0) for q in self.queues))
                for s in STATUS_COLUMNS]


def queue_counts(name: str, using: str = "default") -> dict[str, int]:
    """Jobs per status in queue `name` (exact, from the trigger-kept counts)."""
    counts = counts_by_queue(using, name).get(name, {})
    return {status.value: counts.get(status.value, 0) for status in STATUS_COLUMNS}


def overview(now: datetime | None = None) -> Overview:
    now = now or timezone.now()
    pauses = {p.queue_name: p for p in QueuePause.objects.all()}
    counts = counts_by_queue()
    rows = []
    for name in sorted(counts.keys() | pauses.keys()):
        row = QueueRow(name, counts=counts.get(name, {}), pause=pauses.get(name))
        if row.counts.get(JobStatus.COMPLETED):
            row.spark, row.last_minute = throughput(name, now)
        if row.counts.get(JobStatus.PENDING):
            row.oldest_pending_at = (
                Job.objects.filter(queue_name=name, status=JobStatus.PENDING)
                .order_by("created_at")
                .values_list("created_at", flat=True)
                .first()
            )
        rows.append(row)
    alive = WorkerProcess.objects.filter(last_heartbeat_at__gte=now - WORKER_STALE_AFTER).count()
    return Overview(rows, sum(r.last_minute for r in rows), alive)


def throughput(name: str, now: datetime) -> tuple[list[int], int]:
    """Completions of queue `name` per minute over the last SPARK_MINUTES (oldest first),
    and in the last 60 s: one grouped read of the (queue_name, status, completed_at) index."""
    start = (now - timedelta(minutes=SPARK_MINUTES - 1)).replace(second=0, microsecond=0)
    recent = Case(
        When(completed_at__gte=now - timedelta(minutes=1), then=Value(1)),
        default=Value(0),
    )
    groups = (
        Job.objects.filter(queue_name=name, status=JobStatus.COMPLETED, completed_at__gte=start)
        .annotate(minute=_minute_of("completed_at"), recent=recent)
        .order_by()
        .values_list("minute", "recent")
        .annotate(n=Count("*"))
    )
    spark, last_minute = [0] * SPARK_MINUTES, 0
    for minute, is_recent, n in groups:
        if isinstance(minute, str):
            minute = datetime.fromisoformat(minute.replace(" ", "T")).replace(tzinfo=UTC)
        index = int((minute - start).total_seconds() // 60)
        if 0 <= index < SPARK_MINUTES:
            spark[index] += n
        last_minute += n if is_recent else 0
    return spark, last_minute


def _minute_of(column: str):
    """The minute of a timestamp, computed natively: Django's TruncMinute is a Python
    function on SQLite, where the stored text's first 16 characters ("2026-11-29 21:05")
    are the minute; elsewhere TruncMinute is the database's own (date_trunc, ...)."""
    if connection.vendor == "sqlite":
        return Substr(column, 1, 16)
    return TruncMinute(column)


def expired_leases(now: datetime | None = None, limit: int = 50) -> list[Job]:
    now = now or timezone.now()
    return list(
        Job.objects.filter(status=JobStatus.RUNNING, lease_expires_at__lt=now)
        .order_by("lease_expires_at")
        .only("id", "queue_name", "attempts", "max_attempts", "started_at",
              "lease_expires_at", "last_heartbeat_at")[:limit]
    )


def reaper_runs(limit: int = 20) -> list[ReaperRun]:
    return list(ReaperRun.objects.all()[:limit])


def recurring_jobs(limit: int = 200) -> list[Job]:
    return list(
        Job.objects.filter(cron_schedule__isnull=False)
        .filter(Q(recurring=True) | Q(recurring=False))
        .order_by("-recurring", "next_run_at", "id")[:limit]
    )


def workers(now: datetime | None = None) -> list[tuple[WorkerProcess, bool]]:
    """Each worker process with whether it is stale (no heartbeat for a while)."""
    cutoff = (now or timezone.now()) - WORKER_STALE_AFTER
    return [(w, w.last_heartbeat_at < cutoff) for w in WorkerProcess.objects.all()[:200]]
