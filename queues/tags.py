"""Tags and metadata of a job: `Job(..., tags=["billing", "eu"], meta={...})`.

A job's tags and meta are given at enqueue and never change. Both live on the job's row
(`Job.tags`, `Job.meta`), so that every read of a job (`get_job`, a claim's `RETURNING j.*`)
returns them without another statement. The tags are also written to `JobTag`, one row per
(job, tag), which is what filtering by tag reads:

Why a table of its own and not PostgreSQL's array with a GIN index: the dashboard lists a
queue newest first and stops after a page. A GIN index answers "which rows have this tag"
as an unordered bitmap, so a common tag on a million rows means reading and sorting all of
them; MariaDB and SQLite have no such index at all. A `JobTag` row carries the job's queue
and creation time (both fixed at enqueue), so the B-tree index (queue_name, tag,
created_at, job) gives a queue's tagged jobs already in the page's order on all three
databases: a page reads 51 index entries and 51 jobs by primary key, however many jobs carry
the tag. The admin, which lists every queue, reads the (tag, created_at, job) index.

A job without tags writes no `JobTag` row and costs no statement; the claim and the writes of
a run never touch the table (tags do not change). Deleting a job deletes its rows
(`on_delete=CASCADE`, in the same transaction), and so does pruning.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from django.db import models

from queues.exceptions import InvalidJob, InvalidTags

#: The most tags a job may have: tags name kinds of jobs, not values.
MAX_TAGS = 20
#: The longest tag, in characters (the `JobTag.tag` column).
MAX_TAG_LENGTH = 100
#: Characters a tag must not hold (as queue names): control and format characters, unpaired
#: surrogates, line and paragraph separators (what cannot be stored, or shows as nothing).
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


class JobTag(models.Model):
    """One tag of one job, for filtering by tag (see the module's docstring)."""

    # No index of its own: the unique (job, tag) index leads with the job, which is what
    # the cascade of a job's deletion reads.
    job = models.ForeignKey(
        "queues.Job", on_delete=models.CASCADE, related_name="tag_rows", db_index=False
    )
    tag = models.CharField(max_length=MAX_TAG_LENGTH)
    # The job's, copied at enqueue (none ever changes, but for a declared schedule's row,
    # whose tag rows its sync rewrites): the indexes below filter and order by them.
    queue_name = models.CharField(max_length=255)  # Job.queue_name's (models imports this)
    created_at = models.DateTimeField()
    priority = models.SmallIntegerField(default=2)  # JobPriority.NORMAL (models imports this)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "tag"], name="job_tag_unique")]
        indexes = [
            # The queue page: a queue's jobs with a tag, newest first (read backwards).
            models.Index(fields=["queue_name", "tag", "created_at", "job"], name="job_tag_queue"),
            # The admin: jobs of every queue with a tag, newest first.
            models.Index(fields=["tag", "created_at", "job"], name="job_tag_any_queue"),
            # A queue's jobs with a tag and a priority (the admin's filters): a priority is
            # 5% to 60% of the jobs, which the first index would check job by job.
            models.Index(
                fields=["queue_name", "tag", "priority", "created_at", "job"],
                name="job_tag_queue_priority",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.tag}"


def check_tag(tag: object, error: type[InvalidJob] = InvalidTags) -> str:
    """A tag is 1 to MAX_TAG_LENGTH characters, with no control or format characters (NUL
    included) and no unpaired surrogates, and no whitespace at either end: MariaDB would
    compare such tags as equal to others (PAD SPACE), and an operator could not tell them
    apart on a page."""
    if not isinstance(tag, str) or not tag.strip():
        raise error(f"a tag must be a non-empty string, not {tag!r}"[:200])
    if len(tag) > MAX_TAG_LENGTH:
        raise error(f"a tag is {len(tag)} characters long; the limit is {MAX_TAG_LENGTH}")
    if tag != tag.strip():
        raise error(f"the tag {tag!r} begins or ends with whitespace")
    if any(unicodedata.category(c) in _HIDDEN_CATEGORIES for c in tag):
        raise error("a tag must not contain control or format characters or unpaired surrogates")
    return tag


def check_tags(tags: object) -> list[str]:
    """A job's tags as stored: a list of distinct valid tags in the order given (a tag given
    twice is kept once). None means none."""
    if tags is None:
        return []
    if isinstance(tags, str | bytes) or not isinstance(tags, Sequence | set | frozenset):
        raise InvalidTags(f"tags must be a list of strings, not {type(tags).__name__}")
    tags = list(dict.fromkeys(check_tag(tag) for tag in tags))
    if len(tags) > MAX_TAGS:
        raise InvalidTags(f"a job has {len(tags)} tags; the limit is {MAX_TAGS}")
    return tags


def tag_rows(jobs: Sequence) -> list[JobTag]:
    """The `JobTag` rows of new jobs (none for jobs without tags)."""
    return [
        JobTag(
            job_id=job.id,
            tag=tag,
            queue_name=job.queue_name,
            created_at=job.created_at,
            priority=job.priority,
        )
        for job in jobs
        for tag in job.tags
    ]
