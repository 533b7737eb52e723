"""`manage.py jobs purge --older-than 30d`: delete the jobs that finished before then (and
the batches and workflows that did, whole), a page of ids per transaction through
`JobQueue.delete_jobs`, after a count and a confirmation; `--dry-run` counts only. Every read
goes through the queue's store, by `queues.ops.purging`'s rule. See docs/design/cli.md."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from queues.cli import output, parsing
from queues.cli.actions import confirm
from queues.cli.selection import Selection
from queues.models import Job
from queues.ops import purging

MAX_BATCH = 10_000


def purge(command, queue, options) -> None:
    age = parsing.duration(options["older_than"], "--older-than")
    size = parsing.positive(options["batch_size"], "--batch-size", MAX_BATCH)
    selection = Selection.from_options(
        {"queue": options["queue"], "status": options["status"], "tag": options.get("tag")},
        finished_only=True,
    )
    cutoff = queue.now() - age
    rows = Filtered(cutoff, selection)
    # A filter narrows single jobs; batches and workflows go whole, on an unfiltered purge.
    with_groups = selection.is_empty
    groups = queue.store.finished_groups(cutoff) if with_groups else []
    count = queue.store.count_selected(rows)
    group_jobs = sum(group.total_jobs for group in groups)
    what = f"{count:,} jobs that finished before {cutoff.isoformat(timespec='seconds')}"
    if not selection.is_empty:
        what += f" ({selection.describe()})"
    if groups:
        what += f", and {len(groups):,} batches and workflows with their {group_jobs:,} jobs"
    command.stdout.write(what)
    if options["dry_run"]:
        command.stdout.write("dry run: nothing deleted")
        return
    if not count and not groups:
        return
    confirm(command, options, f"purge {count + group_jobs:,} jobs")
    progress = output.Progress(command.stderr, "purge")
    result = purging.purge(
        queue,
        cutoff,
        rows,
        groups=with_groups,
        size=size or purging.BATCH_SIZE,
        progress=lambda r: progress.note(_summary(r)),
    )
    progress.done(_summary(result))
    command.stdout.write(_summary(result))
    for reason in result.skipped_groups:  # a job of it started again meanwhile
        command.stderr.write(f"kept {reason}")


class Filtered(purging.Purgeable):
    """The purgeable jobs within the command line's filter (a store `Selection`)."""

    def __init__(self, cutoff: datetime, selection: Selection) -> None:
        super().__init__(cutoff)
        self.selection = selection

    def rows(self, using: str) -> QuerySet:
        return self.selection.finished(super().rows(using))

    def matches(self, job: Job) -> bool:
        # The filter holds no age (the purge's is the cutoff), so the time it is given is unused.
        return super().matches(job) and self.selection.matches(job, self.cutoff)


def _summary(result: purging.PurgeResult) -> str:
    text = f"deleted {result.deleted:,} jobs"
    if result.groups:
        text += f", {result.groups:,} batches and workflows ({result.group_jobs:,} jobs)"
    if result.kept:
        text += f", kept {result.kept:,} that changed meanwhile"
    return text
