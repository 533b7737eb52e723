"""The filter of the all-queues jobs page and of "act on all matching" (`SearchFilter`). Read
from a page's query (a bad value is a message, and the filter matches nothing), kept as JSON
on a `BulkOperation`, and stated as a store `Selection`: one queryset, `rows()`, and beside it
the same rule as a test of one row, `matches()`. ORM only. See docs/design/reads.md."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from uuid import UUID

from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from queues.enums import TERMINAL_STATUSES, JobStatus
from queues.exceptions import InvalidJob, InvalidQueueName
from queues.models import Job, JobTag
from queues.store.finished import finished_at, with_finished_at
from queues.tags import check_tag
from queues.validation import validate_queue_name

#: Longer search text is refused: a page's filter, not a document.
MAX_TEXT = 200
#: The parameters a filter reads (and a bulk form carries over), in the page's order.
PARAMS = ("id", "queue", "status", "priority", "tag", "q", "error",
          "created_from", "created_to", "finished_from", "finished_to")  # fmt: skip
_TIMES = {"created_from": "created from", "created_to": "created to",
          "finished_from": "finished from", "finished_to": "finished to"}  # fmt: skip


@dataclass
class SearchFilter:
    job_id: str = ""
    queue: str = ""
    status: str = ""
    priority: int | None = None
    tag: str = ""
    payload: str = ""
    error: str = ""
    created_from: str = ""  # ISO times in UTC, as `_time` wrote them
    created_to: str = ""
    finished_from: str = ""
    finished_to: str = ""
    #: Chosen jobs (an error group's), and what they are, for the operation's description.
    job_ids: list[str] = field(default_factory=list)
    chosen: str = ""
    problems: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, params, queue: str = "") -> SearchFilter:
        """The filter of a page's query; `queue` fixes the queue (the queue page's)."""
        flt, problems = cls(), []
        text = {name: params.get(name, "").strip() for name in PARAMS}
        if not text["id"] and _uuid(text["q"]):  # the queue page's "job id or payload text"
            text["id"], text["q"] = text["q"], ""
        if text["id"]:
            flt.job_id = _uuid(text["id"])
            if not flt.job_id:
                problems.append("The job id is not a UUID (e.g. 0b6c1c58-...-4f1e).")
        flt.queue = queue or text["queue"]
        if flt.queue and not queue:
            try:
                validate_queue_name(flt.queue)
            except InvalidQueueName:
                problems.append("No queue can have that name.")
        if text["status"]:
            if text["status"] in JobStatus.values:
                flt.status = text["status"]
            else:
                problems.append(f"Status is one of {', '.join(JobStatus.values)}.")
        if text["priority"]:
            if text["priority"] in {"0", "1", "2", "3", "4"}:
                flt.priority = int(text["priority"])
            else:
                problems.append("Priority is a number from 0 to 4.")
        if text["tag"]:
            try:
                check_tag(text["tag"])
                flt.tag = text["tag"]
            except InvalidJob:
                problems.append("No job can have that tag (1 to 100 characters, no control ones).")
        for name, label in (("q", "Payload text"), ("error", "Error text")):
            if len(text[name]) > MAX_TEXT:
                problems.append(f"{label} is at most {MAX_TEXT} characters.")
            else:
                setattr(flt, "payload" if name == "q" else "error", text[name])
        for name, label in _TIMES.items():
            if text[name]:
                moment = _time(text[name])
                if moment is None:
                    problems.append(f"“{label}” is not a time (e.g. 2026-12-01T14:30, in UTC).")
                else:
                    setattr(flt, name, moment.isoformat())
        flt.problems = problems
        return flt

    @classmethod
    def from_json(cls, data: dict) -> SearchFilter:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("problems")
        return data

    @property
    def active(self) -> bool:
        return any(v not in ("", None, []) for v in self.to_json().values())

    @property
    def scans(self) -> bool:
        """Whether a page reads rows to check them (no index answers these filters)."""
        return bool(
            self.queue or self.status or self.priority is not None or self.payload
            or self.error or self.finished_from or self.finished_to
        )  # fmt: skip

    @property
    def reads_rows(self) -> bool:
        """Whether counting its jobs reads each candidate row: no index answers a text, a
        priority or a finished range (`search_page.count_matches` bounds such a count)."""
        return bool(
            self.payload or self.error or self.priority is not None
            or self.finished_from or self.finished_to
        )  # fmt: skip

    def describe(self) -> str:
        parts = [f"job {self.job_id}"] if self.job_id else []
        if self.job_ids:
            parts.append(self.chosen or f"{len(self.job_ids)} chosen jobs")
        for label, value in (("queue", self.queue), ("status", self.status),
                             ("tag", self.tag), ("payload has", self.payload),
                             ("error has", self.error)):  # fmt: skip
            if value:
                parts.append(f"{label} {value!r}")
        if self.priority is not None:
            parts.append(f"priority {self.priority}")
        for name, label in _TIMES.items():
            if getattr(self, name):
                parts.append(f"{label} {getattr(self, name)}")
        return ", ".join(parts) or "every job"

    def query(self) -> dict:
        """The page's query parameters that give this filter back."""
        params = {"id": self.job_id, "queue": self.queue, "status": self.status,
                  "priority": "" if self.priority is None else str(self.priority),
                  "tag": self.tag, "q": self.payload, "error": self.error}  # fmt: skip
        params.update({name: getattr(self, name)[:16] for name in _TIMES})
        return {k: v for k, v in params.items() if v}

    def rows(self, using: str = "default") -> QuerySet:
        """Every matching job (nothing if the filter had a problem)."""
        rows = Job.objects.using(using)
        if self.problems:
            return rows.none()
        if self.job_id:
            rows = rows.filter(id=self.job_id)
        if self.job_ids:
            rows = rows.filter(id__in=self.job_ids)
        if self.queue:
            rows = rows.filter(queue_name=self.queue)
        if self.status:
            rows = rows.filter(status=self.status)
        if self.priority is not None:
            rows = rows.filter(priority=self.priority)
        if self.tag:
            tagged = JobTag.objects.using(using).filter(tag=self.tag)
            if self.queue:
                tagged = tagged.filter(queue_name=self.queue)
            rows = rows.filter(id__in=tagged.values("job_id"))
        if self.payload:
            rows = rows.annotate(payload_text=Cast("payload", TextField())).filter(
                payload_text__icontains=self.payload
            )
        if self.error:
            rows = rows.filter(error_message__icontains=self.error)
        if self.created_from:
            rows = rows.filter(created_at__gte=datetime.fromisoformat(self.created_from))
        if self.created_to:
            rows = rows.filter(created_at__lt=datetime.fromisoformat(self.created_to))
        if self.finished_from or self.finished_to:
            rows = self._finished(rows)
        return rows

    def _finished(self, rows: QuerySet) -> QuerySet:
        """Finished (a terminal status) within the range, at its first end time, as
        `Job.duration` and the purge (`queues.ops.purging`) read it."""
        rows = with_finished_at(rows).filter(status__in=sorted(TERMINAL_STATUSES))
        if self.finished_from:
            rows = rows.filter(finished_at__gte=datetime.fromisoformat(self.finished_from))
        if self.finished_to:
            rows = rows.filter(finished_at__lt=datetime.fromisoformat(self.finished_to))
        return rows

    def matches(self, job: Job) -> bool:
        """`rows` as a test of one stored row (the memory store's), so that the filter is a
        store `Selection`."""
        return not self.problems and (
            (not self.job_id or str(job.id) == self.job_id)
            and (not self.job_ids or str(job.id) in self.job_ids)
            and (not self.queue or job.queue_name == self.queue)
            and (not self.status or job.status == self.status)
            and (self.priority is None or job.priority == self.priority)
            and (not self.tag or self.tag in (job.tags or []))
            # The payload's JSON text, as PostgreSQL renders a jsonb value.
            and (
                not self.payload or _has(json.dumps(job.payload, ensure_ascii=False), self.payload)
            )
            and (not self.error or _has(job.error_message, self.error))
            and _within(job.created_at, self.created_from, self.created_to)
            and (not (self.finished_from or self.finished_to) or self._finished_within(job))
        )

    def _finished_within(self, job: Job) -> bool:
        end = finished_at(job)
        return (
            job.status in TERMINAL_STATUSES
            and end is not None
            and _within(end, self.finished_from, self.finished_to)
        )


def _has(text: str | None, part: str) -> bool:
    """`icontains`: NULL contains nothing."""
    return text is not None and part.casefold() in text.casefold()


def _within(moment: datetime, start: str, end: str) -> bool:
    """`start <= moment < end`, each bound an ISO time or "" (none)."""
    return (not start or moment >= datetime.fromisoformat(start)) and (
        not end or moment < datetime.fromisoformat(end)
    )


def _uuid(text: str) -> str:
    try:
        return str(UUID(text)) if len(text) <= 40 else ""
    except ValueError:
        return ""


def _time(text: str) -> datetime | None:
    """An ISO time (a datetime-local field's value), naive meaning UTC; None if it is not
    one or falls outside what every database stores."""
    try:
        moment = datetime.fromisoformat(text[:40])
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
        moment = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return moment if 1 < moment.year < 9999 else None
