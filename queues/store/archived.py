"""The archive's rules, written once for both stores: which jobs may be archived
(`Archivable`, a `Selection` on `finished`'s rule) and how a job, its error history and its
dependents' ids become one `ArchivedJob` row and back (`archive_columns`, `archive_row`,
`unpack_row`): every concrete column of `Job` and `FailedAttempt`, so columns added later
are kept. See docs/design/maintenance.md."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from uuid import UUID

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Exists, Field, OuterRef, Q, QuerySet

from queues.enums import TERMINAL_STATUSES, JobStatus
from queues.models import ArchivedJob, Batch, FailedAttempt, Job, JobDependency, Workflow
from queues.store.finished import (
    FINISHED_BATCHES,
    FINISHED_WORKFLOWS,
    finished_at,
    finished_before,
    is_finished_before,
    with_finished_at,
)

#: The statuses a job is archived in (the engine's own `Archived` status is not one).
ARCHIVABLE = frozenset(TERMINAL_STATUSES - {JobStatus.ARCHIVED})
_UNFINISHED = sorted(set(JobStatus.values) - TERMINAL_STATUSES)
#: JSON shorter than this is stored as it is: zlib's header and table would not pay.
COMPRESS_FROM = 200
PLAIN, ZLIB = b"j", b"z"


class Archivable:
    """The jobs an archive moves (a `Selection`): finished (Completed, Failed, Dead or
    TimedOut) before `cutoff` as a purge reads it, not recurring, in no batch or workflow or
    in one that finished (its tallies no longer move), and with no dependent that has not
    finished (one still waits for it), and not kept by the engine's `stays` (a unique key
    still held); of `queue` only if given. The memory store answers
    the last two itself (`group_open`, `waited_for`): a row alone cannot tell them."""

    def __init__(self, cutoff: datetime, queue: str | None = None, stays=None) -> None:
        self.cutoff = cutoff
        self.queue = queue
        #: A rule of the engine's that a row read whole may still keep a job in the table
        #: (its unique key still held), and the ids it kept: later batches pass them by.
        self.stays = stays
        self.staying: set = set()
        #: Where the walk of Completed jobs got to: a batch's newest `completed_at`. The
        #: next batch starts there instead of walking again past the index entries of the
        #: rows just moved (dead until a VACUUM). Rows an archiver skipped below it (another
        #: held them) are that one's, or the next run's.
        self.floor: datetime | None = None

    def parts(self, using: str) -> list[QuerySet]:
        """`rows` as the SQL store reads a batch of them: the Completed ones in the order of
        the (status, completed_at) index from `floor` (a walk that stops at the batch's
        size; one condition over every status would make PostgreSQL gather all the
        matching entries first, each batch), then the others (few: the failures)."""
        # `finished_before`'s two halves, one a part: that rule with the status fixed.
        done = self._kept(using).filter(status=JobStatus.COMPLETED, completed_at__lt=self.cutoff)
        if self.floor is not None:
            done = done.filter(completed_at__gte=self.floor)
        rest = with_finished_at(self._kept(using)).filter(
            status__in=sorted(ARCHIVABLE - {JobStatus.COMPLETED}), finished_at__lt=self.cutoff
        )
        return [done.order_by("completed_at"), rest.order_by()]

    def rows(self, using: str) -> QuerySet:
        return with_finished_at(self._kept(using)).filter(
            finished_before(self.cutoff), status__in=sorted(ARCHIVABLE)
        )

    def _kept(self, using: str) -> QuerySet:
        """The jobs the rule takes, their status and time aside."""
        jobs = Job.objects.using(using)
        waiting = JobDependency.objects.using(using).filter(
            parent_id=OuterRef("pk"), job__status__in=_UNFINISHED
        )
        # Subqueries, not joins: the rows are locked FOR UPDATE, which a nullable side of
        # an outer join refuses on PostgreSQL.
        done_batches = Batch.objects.using(using).filter(status__in=FINISHED_BATCHES)
        done_workflows = Workflow.objects.using(using).filter(status__in=FINISHED_WORKFLOWS)
        rows = jobs.filter(
            Q(batch__isnull=True) | Q(batch_id__in=done_batches.values("pk")),
            Q(workflow__isnull=True) | Q(workflow_id__in=done_workflows.values("pk")),
            cron_schedule__isnull=True,
        )
        if self.queue is not None:
            rows = rows.filter(queue_name=self.queue)
        if self.staying:
            rows = rows.exclude(pk__in=sorted(self.staying, key=str))
        return rows.filter(~Exists(waiting))

    def sort_out(self, jobs: list[Job]) -> list[Job]:
        """Of `jobs` (read whole, locked), those that go; `stays` keeps the others."""
        if self.stays is None:
            return jobs
        kept = {job.id for job in jobs if self.stays(job)}
        self.staying |= kept
        return [job for job in jobs if job.id not in kept]

    def matches(self, job: Job) -> bool:
        """The rule a row alone can test (its time, status, schedule and queue)."""
        return (
            is_finished_before(job, self.cutoff)
            and job.status in ARCHIVABLE
            and job.cron_schedule is None
            and (self.queue is None or job.queue_name == self.queue)
        )


def group_open(batch: Batch | None, workflow: Workflow | None) -> bool:
    """Whether a job's batch or workflow (its row, or None) has not finished."""
    return (batch is not None and batch.status not in FINISHED_BATCHES) or (
        workflow is not None and workflow.status not in FINISHED_WORKFLOWS
    )


def waited_for(dependent_statuses) -> bool:
    """Whether any of a job's dependents (their statuses) has not finished."""
    return any(status not in TERMINAL_STATUSES for status in dependent_statuses)


# The packing ------------------------------------------------------------------------------
def pack(value) -> bytes:
    """`value` as JSON, zlib-compressed when that is smaller, after a byte that says which."""
    text = json.dumps(value, cls=DjangoJSONEncoder, separators=(",", ":")).encode()
    if len(text) >= COMPRESS_FROM:
        squeezed = zlib.compress(text, 6)
        if len(squeezed) < len(text):
            return ZLIB + squeezed
    return PLAIN + text


def unpack(data) -> object:
    data = bytes(data)  # a memoryview on PostgreSQL
    kind, body = data[:1], data[1:]
    if kind == ZLIB:
        body = zlib.decompress(body)
    elif kind != PLAIN:
        raise ValueError(f"unknown archive format {kind!r}")
    return json.loads(body)


@cache
def _fields(model) -> tuple:
    """Each concrete column of `model`: its attribute, and how its value becomes the text
    its field's `value_to_string` gives (None: a JSON column, kept as it is). The field's
    own method where it has one but for times (isoformat: the same text without a second
    read of the attribute), `str` where it inherits `Field`'s."""
    converters = []
    for field in model._meta.concrete_fields:
        kind = field.get_internal_type()
        if kind == "JSONField":
            text = None
        elif kind == "DateTimeField":
            text = datetime.isoformat
        elif type(field).value_to_string is Field.value_to_string:
            text = str
        else:
            text = _by_field(field)
        converters.append((field.attname, text))
    return tuple(converters)


def _by_field(field):
    return lambda value, row: field.value_to_string(row)


def _columns(row) -> dict:
    """Every concrete column of a model row, each as its field writes it to text (None as
    None), so that `_rebuilt` reads it back exactly."""
    columns = {}
    for attname, text in _fields(type(row)):
        value = getattr(row, attname)
        if value is None or text is None:
            columns[attname] = value
        elif text is str or text is datetime.isoformat:
            columns[attname] = text(value)
        else:
            columns[attname] = text(value, row)
    return columns


def _rebuilt[M](model: type[M], columns: dict, skip=()) -> M:
    """A row of `model` from `_columns`' dict (a column it does not name keeps its default)."""
    row = model()
    for field in model._meta.concrete_fields:
        if field.attname in columns and field.attname not in skip:
            value = columns[field.attname]
            is_json = field.get_internal_type() == "JSONField"
            setattr(
                row, field.attname, value if is_json or value is None else field.to_python(value)
            )
    return row


def archive_columns(
    job: Job, attempts: list[FailedAttempt], dependents: list[UUID], now: datetime
) -> dict:
    """The archive's row of `job` (a stored row), with its history and dependents' ids, as
    the values of `ArchivedJob`'s columns by name."""
    data = {
        "job": _columns(job),
        "attempts": [_columns(row) for row in attempts],
        "dependents": sorted(str(d) for d in dependents),
    }
    return {
        "id": job.id,
        "queue_name": job.queue_name,
        "status": job.status,
        "priority": job.priority,
        "attempts": job.attempts,
        "created_at": job.created_at,
        "finished_at": finished_at(job) or now,
        "archived_at": now,
        "batch_id": job.batch_id,
        "workflow_id": job.workflow_id,
        "unique_key": job.unique_key,
        "tags": list(job.tags or []),
        "failures": len(attempts),
        "data": pack(data),
    }


def archive_row(
    job: Job, attempts: list[FailedAttempt], dependents: list[UUID], now: datetime
) -> ArchivedJob:
    """`archive_columns` as an (unsaved) `ArchivedJob`."""
    return ArchivedJob(**archive_columns(job, attempts, dependents, now))


@dataclass
class Archived:
    """An archived job as it was: its row (unsaved), its history (oldest first; new rows,
    ids given on insert), the ids of the jobs that waited for it, and when it was archived."""

    job: Job
    attempts: list[FailedAttempt]
    dependents: list[UUID]
    archived_at: datetime


def unpack_row(row: ArchivedJob) -> Archived:
    data = unpack(row.data)
    job = _rebuilt(Job, data["job"])
    attempts = [_rebuilt(FailedAttempt, a, skip=("id",)) for a in data["attempts"]]
    return Archived(job, attempts, [UUID(d) for d in data["dependents"]], row.archived_at)
