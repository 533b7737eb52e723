"""What the history page shows: each queue's completions, failures and retries over a window
(the last hour by minute, the last day or week by hour) from the trigger-kept counters, and
the percentiles of its run times and waits from a sample of its newest `SAMPLE` completed
jobs. Bounded whatever the number of jobs. See docs/design/reads.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from queues.enums import JobStatus
from queues.models import Job
from queues.store.counters import rollup
from queues.store.counters.counts import counts_by_queue

SAMPLE = 1000
PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class Window:
    key: str
    label: str
    span: timedelta
    step: timedelta

    @property
    def buckets(self) -> int:
        return int(self.span / self.step)


WINDOWS = {
    w.key: w
    for w in (
        Window("1h", "last hour", timedelta(hours=1), timedelta(minutes=1)),
        Window("24h", "last 24 hours", timedelta(hours=24), timedelta(hours=1)),
        Window("7d", "last 7 days", timedelta(days=7), timedelta(hours=1)),
    )
}
DEFAULT_WINDOW = "24h"


@dataclass
class QueueHistory:
    name: str
    #: (bucket start, [completed, failed, retried]), oldest first.
    buckets: list[tuple[datetime, list[int]]] = field(default_factory=list)
    #: {"run": {50: timedelta, ...}, "wait": {...}}; empty without a sampled completion.
    percentiles: dict[str, dict[int, timedelta]] = field(default_factory=dict)
    sampled: int = 0

    @property
    def totals(self) -> list[int]:
        return [sum(b[1][i] for b in self.buckets) for i in range(3)]


def _end(now: datetime, window: Window) -> datetime:
    """The end of the window's last bucket: the open minute or hour, so that what happened a
    moment ago shows (the last bar grows as its bucket fills)."""
    start = now.astimezone(UTC).replace(second=0, microsecond=0)
    if window.step == rollup.HOUR:
        start = start.replace(minute=0)
    return start + window.step


def history(window: Window, now: datetime, names: list[str] | None = None) -> list[QueueHistory]:
    """Every queue's (or those of `names`) history over `window` ending now."""
    end = _end(now, window)
    first = end - window.span
    if window.step == rollup.HOUR:
        counts = rollup.hourly(first, end)
    else:
        counts = rollup.raw_counts(first, end, "minute")
    known = set(counts_by_queue()) | {queue for queue, _ in counts}
    chosen = sorted(known if names is None else known & set(names))
    starts = [first + window.step * i for i in range(window.buckets)]
    result = []
    for name in chosen:
        row = QueueHistory(name, [(s, counts.get((name, s), [0, 0, 0])) for s in starts])
        row.percentiles, row.sampled = percentiles(name, now - window.span)
        result.append(row)
    return result


def percentiles(name: str, since: datetime) -> tuple[dict[str, dict[int, timedelta]], int]:
    """The p50/p95/p99 of run time (start to completion) and wait (due to start) of the
    queue's newest `SAMPLE` completed jobs that completed after `since`, and how many
    those were."""
    rows = (
        Job.objects.filter(queue_name=name, status=JobStatus.COMPLETED)
        .order_by("-created_at")
        .values_list("scheduled_at", "started_at", "completed_at")[:SAMPLE]
    )
    runs, waits = [], []
    for scheduled, started, completed in rows:
        if started is None or completed is None or completed < since:
            continue
        runs.append(max(completed - started, timedelta(0)))
        waits.append(max(started - scheduled, timedelta(0)))
    if not runs:
        return {}, 0
    return {"run": nearest_rank(runs), "wait": nearest_rank(waits)}, len(runs)


def nearest_rank(values: list[timedelta]) -> dict[int, timedelta]:
    """The nearest-rank percentiles of `values`: the smallest value that at least p % of the
    values are not above."""
    ordered = sorted(values)
    n = len(ordered)
    return {p: ordered[max(-(-p * n // 100) - 1, 0)] for p in PERCENTILES}
