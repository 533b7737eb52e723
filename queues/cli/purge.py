"""`manage.py jobs purge --older-than 30d`: delete the jobs that finished before then (and
the batches and workflows that did, whole), a page of 1,000 ids per transaction through
`JobQueue.delete_jobs`, after a count and a confirmation; `--dry-run` counts only. The rules
of what is purged are `queues.ops.purging`'s."""

from __future__ import annotations

from queues.cli import output, parsing
from queues.cli.actions import confirm
from queues.cli.selection import Selection
from queues.ops import purging

MAX_BATCH = 10_000


def purge(command, queue, options) -> None:
    age = parsing.duration(options["older_than"], "--older-than")
    size = parsing.positive(options["batch_size"], "--batch-size", MAX_BATCH)
    selection = Selection.from_options(
        {"queue": options["queue"], "status": options["status"]}, finished_only=True
    )
    cutoff = queue.now() - age
    rows = selection.finished(purging.purgeable(queue.using, cutoff))
    # A filter narrows single jobs; batches and workflows go whole, on an unfiltered purge.
    with_groups = not selection.queue and not selection.statuses
    groups = purging.finished_groups(queue.using, cutoff) if with_groups else []
    count = rows.count()
    group_jobs = sum(group.total_jobs for group in groups)
    what = f"{count:,} jobs that finished before {cutoff.isoformat(timespec='seconds')}"
    if selection.queue or selection.statuses:
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


def _summary(result: purging.PurgeResult) -> str:
    text = f"deleted {result.deleted:,} jobs"
    if result.groups:
        text += f", {result.groups:,} batches and workflows ({result.group_jobs:,} jobs)"
    if result.kept:
        text += f", kept {result.kept:,} that changed meanwhile"
    return text
