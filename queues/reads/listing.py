"""The job list of the queue page: filters, search and keyset pagination. It never counts and
never uses OFFSET: it merges the newest rows of each status from the (queue_name, status,
created_at) index and continues after a (created_at, id) cursor; a text search reads a window
of each status, a tag the tags' index (or the status's: `tag_plans`). See docs/design/reads.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID

from django.db import connection
from django.db.models import Q, TextField
from django.db.models.functions import Cast

from queues.enums import JobStatus
from queues.exceptions import InvalidJob
from queues.models import Job, JobTag
from queues.reads.tag_plans import status_is_rarer, with_tag
from queues.tags import MAX_TAG_LENGTH, check_tag

PAGE_SIZE = 50
#: The statuses read for an unfiltered list, the usually newest first: once one gives a full
#: page, the others are read only down to its oldest row.
SCAN_ORDER = [
    JobStatus.COMPLETED,
    JobStatus.PENDING,
    JobStatus.RUNNING,
    JobStatus.FAILED,
    JobStatus.DEAD,
    JobStatus.TIMED_OUT,
    JobStatus.RETRYING,
    JobStatus.ARCHIVED,
]
SEARCH_WINDOW = 2_000
#: MySQL/MariaDB store JSON as LONGTEXT, read row by row from the clustered index: on a table
#: larger than the buffer pool, 2,000 rows per status took over half a second (1M jobs).
MYSQL_SEARCH_WINDOW = 500


def search_window() -> int:
    return MYSQL_SEARCH_WINDOW if connection.vendor == "mysql" else SEARCH_WINDOW


@dataclass
class JobFilter:
    queue: str
    status: str = ""
    priority: int | None = None
    search: str = ""
    tag: str = ""

    @property
    def active(self) -> bool:
        """Whether anything is filtered (the page offers to clear it)."""
        return bool(self.status or self.search or self.tag or self.priority is not None)

    @classmethod
    def from_query(cls, queue: str, params) -> JobFilter:
        status = params.get("status", "")
        priority = params.get("priority", "")
        return cls(
            queue=queue,
            status=status if status in JobStatus.values else "",
            priority=int(priority) if priority in {"0", "1", "2", "3", "4"} else None,
            search=params.get("q", "").strip()[:200],
            # Longer than any tag: such a filter matches nothing (see `list_jobs`).
            tag=params.get("tag", "").strip()[: MAX_TAG_LENGTH + 1],
        )


@dataclass
class JobPage:
    jobs: list[Job] = field(default_factory=list)
    next_cursor: str = ""
    search_window: int = 0  # > 0: the text search looked at this many newest jobs per status


def encode_cursor(job: Job) -> str:
    return f"{job.created_at.isoformat()}~{job.id.hex}"


def decode_cursor(text: str) -> tuple[datetime, UUID] | None:
    """The cursor's position, or None for one this page did not write (a time must be aware
    and within UTC's range: the database is asked in UTC)."""
    try:
        moment, _, ident = text.partition("~")
        when = datetime.fromisoformat(moment)
        return (when.astimezone(UTC), UUID(hex=ident)) if when.tzinfo else None
    except (ValueError, OverflowError):
        return None


def _as_uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


def list_jobs(
    flt: JobFilter, cursor: str = "", present: set[str] | None = None, size: int = PAGE_SIZE
) -> JobPage:
    """One page of the queue's jobs, newest first. `present` (the statuses the queue holds)
    saves a query per empty status."""
    ident = _as_uuid(flt.search)
    if ident is not None:
        return JobPage(list(Job.objects.filter(id=ident, queue_name=flt.queue)))
    if flt.tag:
        return _tagged(flt, cursor, size)
    statuses = [flt.status] if flt.status else SCAN_ORDER
    if present is not None:
        statuses = [s for s in statuses if s in present]
    after = decode_cursor(cursor) if cursor else None
    candidates: list = []
    floor = None
    for status in statuses:
        rows = Job.objects.filter(queue_name=flt.queue, status=status)
        if flt.priority is not None:
            rows = rows.filter(priority=flt.priority)
        if after:
            rows = _older_than(rows, after)
        if floor is not None:
            # A status already gave a full page newer than this: older rows cannot make it.
            rows = rows.filter(created_at__gte=floor)
        if flt.search:
            rows = _searched(rows, flt, status)
        newest = list(
            rows.order_by("-created_at", "-id").values_list("id", "created_at")[: size + 1]
        )
        candidates += [pk for pk, _ in newest]
        if len(newest) > size:
            floor = max(floor or newest[-1][1], newest[-1][1])
    # The newest of the candidates, whole rows for these only, and ordered by the database:
    # ties on created_at are broken by id as the database compares ids, which is not always
    # Python's order (MariaDB's UUID type compares the last group of digits first), so the
    # cursor's `id <` continues exactly where the page stopped.
    return _page(candidates, flt, size)


def _older_than(rows, after: tuple, pk: str = "id"):
    """The rows after the cursor's (created_at, id) in page order. The <= bound is what the
    index can range over; the OR only breaks ties."""
    rows = rows.filter(created_at__lte=after[0])
    return rows.filter(Q(created_at__lt=after[0]) | Q(**{f"{pk}__lt": after[1]}))


def _page(ids: list, flt: JobFilter, size: int) -> JobPage:
    found = list(Job.objects.filter(id__in=ids).order_by("-created_at", "-id")[: size + 1])
    page = JobPage(found[:size], search_window=search_window() if flt.search else 0)
    if len(found) > size:
        page.next_cursor = encode_cursor(page.jobs[-1])
    return page


def _tagged(flt: JobFilter, cursor: str, size: int) -> JobPage:
    """One page of the queue's jobs that have the filter's tag, newest first."""
    try:
        check_tag(flt.tag)
    except InvalidJob:
        return JobPage()  # no job has such a tag
    if flt.status and not flt.search and status_is_rarer(flt.tag, flt.status, flt.queue):
        return _tagged_by_status(flt, cursor, size)
    rows = JobTag.objects.filter(queue_name=flt.queue, tag=flt.tag)
    if flt.status:
        rows = rows.filter(job__status=flt.status)
    if flt.priority is not None:
        rows = rows.filter(priority=flt.priority)  # the tag row's copy, in its index
    after = decode_cursor(cursor) if cursor else None
    if after:
        rows = _older_than(rows, after, "job_id")
    if flt.search:
        # The newest `search_window()` tagged jobs, whatever their status.
        window = search_window()
        every = JobTag.objects.filter(queue_name=flt.queue, tag=flt.tag).order_by("-created_at")
        floor = list(every.values_list("created_at", flat=True)[window : window + 1])
        if floor:
            rows = rows.filter(created_at__gte=floor[0])
        rows = rows.annotate(payload_text=Cast("job__payload", TextField())).filter(
            payload_text__icontains=flt.search
        )
    ids = rows.order_by("-created_at", "-job_id").values_list("job_id", flat=True)[: size + 1]
    return _page(list(ids), flt, size)


def _tagged_by_status(flt: JobFilter, cursor: str, size: int) -> JobPage:
    """The page read along the status's index, each job checked for the tag (a status
    rarer than the tag: see `queues.reads.tag_plans`)."""
    rows = with_tag(Job.objects.filter(queue_name=flt.queue, status=flt.status), flt.tag)
    if flt.priority is not None:
        rows = rows.filter(priority=flt.priority)
    after = decode_cursor(cursor) if cursor else None
    if after:
        rows = _older_than(rows, after)
    ids = rows.order_by("-created_at", "-id").values_list("id", flat=True)[: size + 1]
    return _page(list(ids), flt, size)


def _searched(rows, flt: JobFilter, status: str):
    """Payload text search over the newest `search_window()` jobs of this status."""
    window = search_window()
    floor = (
        Job.objects.filter(queue_name=flt.queue, status=status)
        .order_by("-created_at")
        .values_list("created_at", flat=True)[window : window + 1]
    )
    floor = list(floor)
    if floor:
        rows = rows.filter(created_at__gte=floor[0])
    return rows.annotate(payload_text=Cast("payload", TextField())).filter(
        payload_text__icontains=flt.search
    )
