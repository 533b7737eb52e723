"""Which index a tag filter combined with a status reads: along the tag's index checking each
job's status, or along the status's index checking each job's tag, whichever selects fewer
jobs (the status's exact count against the tag's, counted up to `TAG_COUNT_CAP`). The
databases' planners cannot tell. ORM only. See docs/design/reads.md."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from queues.models import JobTag
from queues.store.counters.counts import counts_by_queue

#: The most tag rows counted to compare a tag with a status (an index-only range: 28 ms for
#: 10,900 entries on PostgreSQL at load 15, so about 5 ms at this cap).
TAG_COUNT_CAP = 2_000


def status_count(status: str, queue: str | None = None) -> int:
    """The exact number of jobs with `status` (of `queue`, or of every queue)."""
    counts = counts_by_queue(queue_name=queue)
    return sum(by_status.get(status, 0) for by_status in counts.values())


def status_is_rarer(tag: str, status: str, queue: str | None = None) -> bool:
    """Whether fewer jobs have `status` than have `tag` (in `queue`, or in all), so that a
    list of both reads along the status's index."""
    jobs = status_count(status, queue)
    cap = min(jobs, TAG_COUNT_CAP)
    rows = JobTag.objects.filter(tag=tag)
    if queue is not None:
        rows = rows.filter(queue_name=queue)
    # Only the indexed created_at: the count reads the index alone, never the table.
    return rows.order_by().values("created_at")[: cap + 1].count() > cap


def has_tag(tag: str) -> Exists:
    """The semi-join: the job has `tag` (one probe of the tags' unique (job, tag) index)."""
    return Exists(JobTag.objects.filter(job_id=OuterRef("pk"), tag=tag))


def with_tag(jobs: QuerySet, tag: str) -> QuerySet:
    return jobs.filter(has_tag(tag))
