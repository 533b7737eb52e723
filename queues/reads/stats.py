"""Read-only queries behind the dashboard's overview, workers, reaper and recurring pages.
Counts and throughput come from trigger-kept rows (`JobCount`, `CompletionCount`), never from
a COUNT(*) of the jobs table; every other query is bounded by an index and a LIMIT, so the
pages stay fast on a table of a million jobs. See docs/design/reads.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from queues.enums import DependencyStatus, JobStatus
from queues.models import Job, QueuePause, ReaperRun, WorkerProcess
from queues.store.counters import completions
from queues.store.counters.counts import counts_by_queue

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
#: The dependency states of a job a worker may claim (as the claim's SQL has them).
CLAIMABLE_DEPENDENCIES = (DependencyStatus.NONE, DependencyStatus.SATISFIED)
#: A worker whose heartbeat is older than this is shown as stale.
WORKER_STALE_AFTER = timedelta(seconds=60)


@dataclass
class QueueRow:
    name: str
    counts: dict[str, int] = field(default_factory=dict)
    #: Completions per full minute, oldest first; the last is the last full minute.
    spark: list[int] = field(default_factory=lambda: [0] * SPARK_MINUTES)
    oldest_pending_at: datetime | None = None
    pause: QueuePause | None = None

    @property
    def status_cells(self) -> list[tuple[str, int]]:
        return [(s.value, self.counts.get(s.value, 0)) for s in STATUS_COLUMNS]

    @property
    def last_minute(self) -> int:
        """Completions in the last full minute."""
        return self.spark[-1]


@dataclass
class Overview:
    queues: list[QueueRow]
    workers_alive: int
    #: The start of the last full minute, whose completions `last_minute` counts.
    minute: datetime

    @property
    def total_cells(self) -> list[tuple[str, int]]:
        return [
            (s.value, sum(q.counts.get(s.value, 0) for q in self.queues)) for s in STATUS_COLUMNS
        ]

    @property
    def last_minute(self) -> int:
        return sum(q.last_minute for q in self.queues)

    @property
    def minute_end(self) -> datetime:
        return self.minute + timedelta(minutes=1)


def queue_counts(name: str, using: str = "default") -> dict[str, int]:
    """Jobs per status in queue `name` (exact, from the trigger-kept counts)."""
    counts = counts_by_queue(using, name).get(name, {})
    return {status.value: counts.get(status.value, 0) for status in STATUS_COLUMNS}


def overview(now: datetime | None = None) -> Overview:
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
    # Every queue, not only those with Completed jobs: a recurring job's completions leave
    # its row Pending.
    spark = throughputs([row.name for row in rows], now)
    oldest = oldest_pending([row.name for row in rows if row.counts.get(JobStatus.PENDING)])
    for row in rows:
        row.spark = spark[row.name]
        row.oldest_pending_at = oldest.get(row.name)
    alive = WorkerProcess.objects.filter(last_heartbeat_at__gte=now - WORKER_STALE_AFTER).count()
    return Overview(rows, alive, last_full_minute(now))


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
    return _first_rows(parts)


def oldest_due(names: list[str], now: datetime) -> dict[str, datetime]:
    """When each queue's longest-waiting due job became due (its `scheduled_at`), among the
    jobs a worker could claim now (Pending, due, no dependency waiting, not a disabled
    recurring job), whatever its priority and however it got there (enqueued with a past
    time, retried after a backoff, released by the reaper). The first entry of the job_due
    index (queue, status, dependency state, scheduled_at) for each claimable dependency state
    of each queue, all in one UNION ALL where the database allows it, as `oldest_pending`. A
    queue with no due job is absent."""
    parts = [
        Job.objects.filter(
            queue_name=name,
            status=JobStatus.PENDING,
            dependency_status=state,
            scheduled_at__lte=now,
        )
        .filter(Q(cron_schedule__isnull=True) | Q(recurring=True))
        .order_by("scheduled_at")
        .values_list("queue_name", "scheduled_at")[:1]
        for name in names
        for state in CLAIMABLE_DEPENDENCIES
    ]
    oldest: dict[str, datetime] = {}
    for name, due in _rows(parts):
        if name not in oldest or due < oldest[name]:
            oldest[name] = due
    return oldest


def _first_rows(parts: list) -> dict:
    """{key: value} of the (key, value) rows of `parts` (querysets of one row each)."""
    return dict(_rows(parts))


def _rows(parts: list) -> list:
    """The rows of `parts` (querysets of one row each): one UNION ALL where the database
    allows a LIMIT in its parts (SQLite does not, and runs in-process: no round trip to
    save)."""
    if not parts:
        return []
    if len(parts) > 1 and connection.features.supports_slicing_ordering_in_compound:
        return list(parts[0].union(*parts[1:], all=True).order_by())
    return [row for part in parts for row in part]


def last_full_minute(now: datetime) -> datetime:
    """The start of the last minute that has ended by `now` (UTC)."""
    return completions.minute_of(now) - timedelta(minutes=1)


def throughput(name: str, now: datetime) -> list[int]:
    """`throughputs` of one queue."""
    return throughputs([name], now)[name]


def throughputs(names: list[str], now: datetime) -> dict[str, list[int]]:
    """Completions of each queue in each of the last SPARK_MINUTES full minutes, oldest first
    (the last is the last full minute): a read of the trigger-kept per-minute counts
    (`queues.store.counters.completions`), a handful of rows per queue, however many jobs complete.
    Only full minutes, so that each figure is a whole minute's and stays put (the open minute would
    always look low, and the figure would jump at each minute)."""
    last = last_full_minute(now)
    first = last - timedelta(minutes=SPARK_MINUTES - 1)
    counts = completions.per_minute(names, first, last)
    minutes = [first + timedelta(minutes=i) for i in range(SPARK_MINUTES)]
    return {name: [counts.get(name, {}).get(minute, 0) for minute in minutes] for name in names}


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
