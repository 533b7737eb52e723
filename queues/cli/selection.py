"""Which jobs a filter of the command line selects (`--queue`, `--status`, `--tag`,
`--older-than`, `--newer-than`): one `Selection`, read by `list` and acted on, a page of ids
at a time, by `retry`, `cancel`, `delete` and `purge`. Age counts from a job's creation,
except in `purge`, which counts from when it finished. See docs/design/cli.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import QuerySet

from queues.cli import parsing
from queues.models import Job
from queues.tags import JobTag


@dataclass(frozen=True)
class Selection:
    queue: str | None = None
    statuses: list[str] = field(default_factory=list)
    older_than: timedelta | None = None
    newer_than: timedelta | None = None
    tag: str | None = None

    @classmethod
    def from_options(cls, options: dict, *, finished_only: bool = False) -> Selection:
        older = options.get("older_than")
        newer = options.get("newer_than")
        return cls(
            queue=parsing.queue_name(options.get("queue")),
            statuses=parsing.statuses(options.get("status"), finished_only=finished_only),
            tag=parsing.tag(options.get("tag")),
            older_than=None if older is None else parsing.duration(older, "--older-than"),
            newer_than=None if newer is None else parsing.duration(newer, "--newer-than"),
        )

    @property
    def is_empty(self) -> bool:
        """No filter at all: every job."""
        return not (self.queue or self.statuses or self.tag or self.older_than or self.newer_than)

    def describe(self) -> str:
        parts = []
        if self.queue:
            parts.append(f"queue {self.queue!r}")
        if self.statuses:
            parts.append("status " + "/".join(self.statuses))
        if self.tag:
            parts.append(f"tag {self.tag!r}")
        if self.older_than:
            parts.append(f"older than {self.older_than}")
        if self.newer_than:
            parts.append(f"newer than {self.newer_than}")
        return ", ".join(parts) or "every job"

    def jobs(self, using: str, now: datetime, rows: QuerySet | None = None) -> QuerySet:
        """The selected jobs (of `rows`, default every job), by creation time."""
        rows = Job.objects.using(using) if rows is None else rows
        if self.queue:
            rows = rows.filter(queue_name=self.queue)
        if self.statuses:
            rows = rows.filter(status__in=self.statuses)
        if self.tag:
            rows = rows.filter(id__in=self._tagged(using))
        if self.older_than:
            rows = rows.filter(created_at__lt=now - self.older_than)
        if self.newer_than:
            rows = rows.filter(created_at__gte=now - self.newer_than)
        return rows

    def matches(self, job: Job, now: datetime) -> bool:
        """`jobs` as a test of one row (asked again of a locked row before it is changed)."""
        created = job.created_at
        return (
            (not self.queue or job.queue_name == self.queue)
            and (not self.statuses or job.status in self.statuses)
            and (not self.tag or self.tag in (job.tags or []))
            and (not self.older_than or created < now - self.older_than)
            and (not self.newer_than or created >= now - self.newer_than)
        )

    def finished(self, rows: QuerySet) -> QuerySet:
        """`rows` narrowed by queue, status and tag only (purge's age is its own)."""
        if self.queue:
            rows = rows.filter(queue_name=self.queue)
        if self.statuses:
            rows = rows.filter(status__in=self.statuses)
        if self.tag:
            rows = rows.filter(id__in=self._tagged(rows.db))
        return rows

    def _tagged(self, using: str) -> QuerySet:
        """The ids of the jobs with the tag, read from the tags' index (with the queue's
        when there is one, which leads the queue page's index)."""
        tagged = JobTag.objects.using(using).filter(tag=self.tag)
        if self.queue:
            tagged = tagged.filter(queue_name=self.queue)
        return tagged.values("job_id")
