"""Read-only queries behind the dashboard. Every write goes through `JobQueue`; this module
only reads, and every query is bounded by an index and a LIMIT (no COUNT(*) per page, no
OFFSET), so the pages stay fast on a table of a million jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache

from django.db import connection, connections
from django.db.models import Case, Count, Q, Value, When
from django.db.models.functions import Substr, TruncMinute
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
#: Counts stop at this many (shown as "5k+"): exact counts of millions of rows would cost
#: a scan each time the page polls.
COUNT_CAP = 5_000
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
    def status_cells(self) -> list[tuple[str, int, bool]]:
        """(status, count, capped) per status column; a capped count means "at least"."""
        return [count_cell(s, self.counts.get(s.value, 0)) for s in STATUS_COLUMNS]


@dataclass
class Overview:
    queues: list[QueueRow]
    last_minute: int
    workers_alive: int

    @property
    def total_cells(self) -> list[tuple[str, int, bool]]:
        cells = []
        for status in STATUS_COLUMNS:
            counts = [q.counts.get(status.value, 0) for q in self.queues]
            capped = any(n > COUNT_CAP for n in counts)
            cells.append((status.value, sum(min(n, COUNT_CAP) for n in counts), capped))
        return cells


def count_cell(status: JobStatus, n: int) -> tuple[str, int, bool]:
    return (status.value, min(n, COUNT_CAP), n > COUNT_CAP)


def queue_names(limit: int = 200) -> list[str]:
    """The distinct queue names, one index seek each (a loose index scan): no scan of the
    table however many jobs each queue holds."""
    names: list[str] = []
    last = ""
    jobs = Job.objects.order_by("queue_name").values_list("queue_name", flat=True)
    while len(names) < limit:
        name = jobs.filter(queue_name__gt=last).first()
        if name is None:
            break
        names.append(name)
        last = name
    return names


def queue_counts(name: str, using: str = "default") -> dict[str, int]:
    """Jobs per status in `name`, exact up to COUNT_CAP (above it COUNT_CAP + 1: "at least").

    Each count reads at most COUNT_CAP + 1 entries of the (queue_name, status, created_at)
    index, so a queue of millions costs no more than one of ten thousand; the counts of all
    statuses travel in one statement (a UNION ALL of the ORM's own capped subqueries)."""
    sql = _counts_sql(connections[using].vendor, using, COUNT_CAP)
    params = [value for status in STATUS_COLUMNS for value in (name, status.value)]
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        counts = [row[0] for row in cursor.fetchall()]
    return {status.value: n for status, n in zip(STATUS_COLUMNS, counts, strict=True)}


@cache
def _counts_sql(vendor: str, using: str, cap: int) -> str:
    """The statement of `queue_counts`, compiled by the ORM once (the overview asks for it
    once per queue at every poll, and building six querysets each time costs more than
    running them)."""
    terms = []
    for status in STATUS_COLUMNS:
        # status is in the index; selecting the primary key would read the table.
        capped = (
            Job.objects.using(using)
            .filter(queue_name=_QUEUE_MARK, status=status)
            .order_by()
            .values_list("status")[: cap + 1]
        )
        sql, params = capped.query.sql_with_params()
        if list(params) != [_QUEUE_MARK, status.value]:
            raise AssertionError(f"unexpected parameters: {params!r}")
        terms.append(f"SELECT COUNT(*) FROM ({sql}) capped_{len(terms)}")
    return " UNION ALL ".join(terms)


_QUEUE_MARK = "\x00queue"


def overview(now: datetime | None = None) -> Overview:
    now = now or timezone.now()
    pauses = {p.queue_name: p for p in QueuePause.objects.all()}
    names = sorted(set(queue_names()) | pauses.keys())
    rows = []
    for name in names:
        row = QueueRow(name, counts=queue_counts(name), pause=pauses.get(name))
        if row.counts[JobStatus.COMPLETED]:
            row.spark, row.last_minute = throughput(name, now)
        if row.counts[JobStatus.PENDING]:
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
