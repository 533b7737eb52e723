"""Read-only queries behind the dashboard. Every write goes through `JobQueue`; this module
only reads, and every query is bounded by an index and a LIMIT (no COUNT(*) per page, no
OFFSET), so the pages stay fast on a table of a million jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncMinute
from django.utils import timezone

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
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def status_cells(self) -> list[tuple[str, int]]:
        return [(s.value, self.counts.get(s.value, 0)) for s in STATUS_COLUMNS]


@dataclass
class Overview:
    queues: list[QueueRow]
    totals: dict[str, int]
    last_minute: int
    workers_alive: int

    @property
    def total_cells(self) -> list[tuple[str, int]]:
        return [(s.value, self.totals.get(s.value, 0)) for s in STATUS_COLUMNS]


def overview(now: datetime | None = None) -> Overview:
    now = now or timezone.now()
    rows: dict[str, QueueRow] = {}

    def row(name: str) -> QueueRow:
        if name not in rows:
            rows[name] = QueueRow(name)
        return rows[name]

    # One aggregate over the (queue_name, status, created_at) index.
    counts = Job.objects.order_by().values_list("queue_name", "status").annotate(n=Count("*"))
    for name, status, n in counts:
        row(name).counts[status] = n
    for pause in QueuePause.objects.all():
        row(pause.queue_name).pause = pause
    _add_throughput(rows, row, now)
    for name, r in rows.items():
        if r.counts.get(JobStatus.PENDING):
            r.oldest_pending_at = (
                Job.objects.filter(queue_name=name, status=JobStatus.PENDING)
                .order_by("created_at")
                .values_list("created_at", flat=True)
                .first()
            )
    totals: dict[str, int] = {}
    for r in rows.values():
        for status, n in r.counts.items():
            totals[status] = totals.get(status, 0) + n
    alive = WorkerProcess.objects.filter(last_heartbeat_at__gte=now - WORKER_STALE_AFTER).count()
    ordered = sorted(rows.values(), key=lambda r: r.name)
    return Overview(ordered, totals, sum(r.last_minute for r in ordered), alive)


def _add_throughput(rows, row, now: datetime) -> None:
    """Completions per queue per minute over the last SPARK_MINUTES, from the
    (status, completed_at) index."""
    start = (now - timedelta(minutes=SPARK_MINUTES - 1)).replace(second=0, microsecond=0)
    per_minute = (
        Job.objects.filter(status=JobStatus.COMPLETED, completed_at__gte=start)
        .annotate(minute=TruncMinute("completed_at"))
        .order_by()
        .values_list("queue_name", "minute")
        .annotate(n=Count("*"))
    )
    for name, minute, n in per_minute:
        index = int((minute - start).total_seconds() // 60)
        if 0 <= index < SPARK_MINUTES:
            row(name).spark[index] += n
    last = Job.objects.filter(
        status=JobStatus.COMPLETED, completed_at__gte=now - timedelta(minutes=1)
    ).order_by().values_list("queue_name").annotate(n=Count("*"))
    for name, n in last:
        row(name).last_minute = n
    for r in rows.values():
        r.spark = r.spark[:SPARK_MINUTES]


def queue_counts(name: str) -> dict[str, int]:
    rows = (
        Job.objects.filter(queue_name=name)
        .order_by()
        .values_list("status")
        .annotate(n=Count("*"))
    )
    return dict(rows)


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
