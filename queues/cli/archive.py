"""`manage.py jobs archive` and `jobs restore`: move the jobs that finished long enough ago
to the archive, a batch per transaction, through `JobQueue.archive_jobs` (its rule:
`queues.store.archived.Archivable`), and put archived jobs back as they were. Reversible,
so neither asks for confirmation. See docs/design/cli.md."""

from __future__ import annotations

from django.core.management.base import CommandError

from queues import conf
from queues.cli import output, parsing
from queues.engine.archives import ARCHIVE_BATCH

MAX_BATCH = 10_000
MAX_LIMIT = 1_000_000_000


def archive(command, queue, options) -> None:
    if options["older_than"] is not None:
        age = parsing.duration(options["older_than"], "--older-than")
    else:
        age = conf.get("ARCHIVE_AFTER")
        if age is None:
            raise CommandError('give --older-than, or set HAMMERWEB["ARCHIVE_AFTER"]')
    name = parsing.queue_name(options["queue"])
    limit = parsing.positive(options["limit"], "--limit", MAX_LIMIT)
    size = parsing.positive(options["batch_size"], "--batch-size", MAX_BATCH) or ARCHIVE_BATCH
    cutoff = queue.now() - age
    what = f"jobs that finished before {cutoff.isoformat(timespec='seconds')}"
    if name is not None:
        what += f" (queue {name!r})"
    if options["dry_run"]:
        count = queue.count_archivable(age, name)
        shown = count if limit is None else min(count, limit)
        command.stdout.write(f"{shown:,} {what} would be archived")
        command.stdout.write("dry run: nothing archived")
        return
    progress = output.Progress(command.stderr, "archive")
    moved = queue.archive_jobs(
        age,
        queue_name=name,
        limit=limit,
        batch_size=size,
        progress=lambda total: progress.note(f"archived {total:,} jobs"),
    )
    progress.done(f"archived {moved:,} jobs")
    command.stdout.write(f"archived {moved:,} {what}")
    if options["vacuum"] and moved:
        queue.vacuum_jobs()
        command.stdout.write("vacuumed the jobs table")


def restore(command, queue, options) -> None:
    ids = parsing.job_ids(options["ids"])
    if not ids:
        raise CommandError("give the ids of archived jobs to restore")
    restored = set(queue.restore(ids))
    command.stdout.write(f"restored {len(restored):,} jobs")
    missing = [job_id for job_id in ids if job_id not in restored]
    for job_id in missing:
        command.stderr.write(f"no archived job {job_id} (or a job with its id is in the table)")
    if missing:
        raise CommandError(f"{len(missing)} of {len(ids)} ids were not restored")
