"""Tags and metadata of a job: `Job(..., tags=["billing", "eu"], meta={...})`, given at
enqueue and never changed. Both live on the job's row; the tags are also `JobTag` rows, one
per (job, tag), which the tag filters read. The rules here: what a tag may be, and the rows
a new job's tags make. See docs/design/tables.md."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from queues.exceptions import InvalidJob, InvalidTags
from queues.models import MAX_TAG_LENGTH, JobTag  # also imported from here

#: The most tags a job may have: tags name kinds of jobs, not values.
MAX_TAGS = 20
#: Characters a tag must not hold (as queue names): control and format characters, unpaired
#: surrogates, line and paragraph separators (what cannot be stored, or shows as nothing).
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


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
    if not (tag.isascii() and tag.isprintable()) and any(
        unicodedata.category(c) in _HIDDEN_CATEGORIES for c in tag
    ):
        raise error("a tag must not contain control or format characters or unpaired surrogates")
    return tag


def check_tags(tags: object) -> list[str]:
    """A job's tags as stored: a list of distinct valid tags in the order given (a tag given
    twice is kept once). None means none."""
    if tags is None or (type(tags) is list and not tags):
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
