"""Read-only queries behind the dashboard. Every write goes through `JobQueue`; this module
only reads. Counts come from the trigger-kept `JobCount` rows (`queues.counts`), never from a
COUNT(*) of the jobs table; every other query is bounded by an index and a LIMIT, so the
pages stay fast on a table of a million jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Case, Count, Value, When
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
        return [
            (s.value, sum(q.counts.get(s.value, 0) for q in self.queues)) for s in STATUS_COLUMNS
        ]


def queue_counts(name: str, using: str = "default") -> dict[str, int]:
    """Jobs per status in queue `name` (exact, from the trigger-kept counts)."""
    counts = counts_by_queue(using, name).get(name, {})
    return {status.value: counts.get(status.value, 0) for status in STATUS_COLUMNS}


def overview(now: datetime | None = None, cache: MinuteCache | None = None) -> Overview:
    """Every queue's counts, pause, throughput and oldest pending job. Five statements
    whatever the number of queues (the throughput and the oldest pending jobs of all queues
    are one statement each), since on a busy server each round trip waits its turn."""
    now = now or timezone.now()
    pauses = {p.queue_name: p for p in QueuePause.objects.all()}
    counts = counts_by_queue()
    rows = [
        QueueRow(name, counts=counts.get(name, {}), pause=pauses.get(name))
        for name in sorted(counts.keys() | pauses.keys())
    ]
    completing = [row.name for row in rows if row.counts.get(JobStatus.COMPLETED)]
    spark = throughputs(completing, now, cache)
    oldest = oldest_pending([row.name for row in rows if row.counts.get(JobStatus.PENDING)])
    for row in rows:
        if row.name in spark:
            row.spark, row.last_minute = spark[row.name]
        row.oldest_pending_at = oldest.get(row.name)
    alive = WorkerProcess.objects.filter(last_heartbeat_at__gte=now - WORKER_STALE_AFTER).count()
    return Overview(rows, sum(r.last_minute for r in rows), alive)


def oldest_pending(names: list[str]) -> dict[str, datetime]:
    """The creation time of each queue's oldest pending job: the first entry of the (queue,
    status, created_at) index per queue, all in one UNION ALL where the database allows a
    LIMIT in its parts (SQLite does not, and runs in-process: no round trip to save)."""
    parts = [
        Job.objects.filter(queue_name=name, status=JobStatus.PENDING)
        .order_by("created_at")
        .values_list("queue_name", "created_at")[:1]
        for name in names
    ]
    if not parts:
        return {}
    if len(parts) > 1 and connection.features.supports_slicing_ordering_in_compound:
        return dict(parts[0].union(*parts[1:], all=True).order_by())
    return dict(row for part in parts for row in part)


def throughput(name: str, now: datetime, cache: MinuteCache | None = None) -> tuple[list[int], int]:
    """`throughputs` of one queue."""
    return throughputs([name], now, cache).get(name, ([0] * SPARK_MINUTES, 0))


def throughputs(
    names: list[str], now: datetime, cache: MinuteCache | None = None
) -> dict[str, tuple[list[int], int]]:
    """Completions of each queue per minute over the last SPARK_MINUTES (oldest first), and
    in the last 60 s: one grouped read of the (queue_name, status, completed_at) index (with
    `cache`, only of the minutes it does not hold)."""
    if not names:
        return {}
    start = (now - timedelta(minutes=SPARK_MINUTES - 1)).replace(second=0, microsecond=0)
    if cache is None:
        read = _completions(names, start, now)
    else:
        read = cache.read(names, start, now)
    return {
        name: (
            [per_minute.get(start + timedelta(minutes=i), 0) for i in range(SPARK_MINUTES)],
            last_minute,
        )
        for name, (per_minute, last_minute) in read.items()
    }


Completions = dict[str, tuple[dict[datetime, int], int]]


def _completions(names: list[str], since: datetime, now: datetime) -> Completions:
    """Per queue: {minute: completions} from `since` on, and the completions of the last
    60 s."""
    recent = Case(
        When(completed_at__gte=now - timedelta(minutes=1), then=Value(1)),
        default=Value(0),
    )
    # SQLite plans `queue_name IN (...)` on the (status, completed_at) index and then reads
    # every row of the window; one statement per queue keeps it on the (queue_name, status,
    # completed_at) index, and costs no round trip in-process.
    batches = [[name] for name in names] if connection.vendor == "sqlite" else [names]
    groups = [
        group
        for batch in batches
        for group in Job.objects.filter(
            queue_name__in=batch, status=JobStatus.COMPLETED, completed_at__gte=since
        )
        .annotate(minute=_minute_of("completed_at"), recent=recent)
        .order_by()
        .values_list("queue_name", "minute", "recent")
        .annotate(n=Count("*"))
    ]
    result: Completions = {name: ({}, 0) for name in names}
    for name, minute, is_recent, n in groups:
        if isinstance(minute, str):
            minute = datetime.fromisoformat(minute.replace(" ", "T"))
        minute = minute.replace(tzinfo=UTC) if minute.tzinfo is None else minute.astimezone(UTC)
        per_minute, last_minute = result[name]
        per_minute[minute] = per_minute.get(minute, 0) + n
        result[name] = (per_minute, last_minute + (n if is_recent else 0))
    return result


class MinuteCache:
    """Completions per minute of the minutes that closed more than SETTLE ago, kept between
    reads by one long-lived reader (the live dashboard's aggregator, which reads every
    second). A closed minute's count stays put (a job is stamped completed as it is written
    and committed at once), so each read only counts the open minutes: at a thousand
    completions a minute, counting all 30 minutes again would cost far more than the rest of
    the overview together. Pages do not use it: each request reads everything."""

    SETTLE = timedelta(minutes=1)

    def __init__(self) -> None:
        self.minutes: dict[str, dict[datetime, int]] = {}
        self.until: dict[str, datetime] = {}  # a queue's minutes before this are in `minutes`

    def read(self, names: list[str], start: datetime, now: datetime) -> Completions:
        settled = (now - self.SETTLE).replace(second=0, microsecond=0)
        # One read from the earliest minute any of them lacks; a minute read again replaces
        # the kept count (it is the whole count of that minute), never adds to it.
        since = min(max(start, self.until.get(name, start)) for name in names)
        fresh = _completions(names, since, now)
        result: Completions = {}
        for name, (per_minute, last_minute) in fresh.items():
            kept = {m: n for m, n in self.minutes.get(name, {}).items() if m >= start}
            kept.update((m, n) for m, n in per_minute.items() if m < settled)
            self.minutes[name] = kept
            self.until[name] = max(since, settled)
            result[name] = ({**kept, **per_minute}, last_minute)
        return result


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
        .only(
            "id",
            "queue_name",
            "attempts",
            "max_attempts",
            "started_at",
            "lease_expires_at",
            "last_heartbeat_at",
        )[:limit]
    )


def reaper_runs(limit: int = 20) -> list[ReaperRun]:
    return list(ReaperRun.objects.all()[:limit])


def recurring_jobs(limit: int = 200) -> list[Job]:
    """Enabled recurring jobs by next run, then disabled ones. Each half is a range of the
    (recurring, next_run_at) index, also where it cannot be partial (MySQL, MariaDB):
    `next_run_at IS NOT NULL` keeps the plain jobs (no next run) out of the disabled half."""
    cron = Job.objects.filter(cron_schedule__isnull=False).order_by("next_run_at", "id")
    enabled = list(cron.filter(recurring=True)[:limit])
    disabled = cron.filter(recurring=False, next_run_at__isnull=False)
    return enabled + list(disabled[: limit - len(enabled)])


def workers(now: datetime | None = None) -> list[tuple[WorkerProcess, bool]]:
    """Each worker process with whether it is stale (no heartbeat for a while)."""
    cutoff = (now or timezone.now()) - WORKER_STALE_AFTER
    return [(w, w.last_heartbeat_at < cutoff) for w in WorkerProcess.objects.all()[:200]]
