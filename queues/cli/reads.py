"""The reading subcommands of `manage.py jobs`: `list`, `show` (with why the job waits) and
`stats`. They write
nothing; `stats` reads the trigger-kept counts (a few rows, never a scan of the jobs).
See docs/design/cli.md."""

from __future__ import annotations

from dataclasses import asdict

from django.core.management.base import CommandError

from queues import tracing
from queues.cli import output, parsing
from queues.cli.selection import Selection
from queues.enums import JobStatus
from queues.models import QueuePause
from queues.store.counters.counts import counts_by_queue

LIST_LIMIT = 50
MAX_LIST_LIMIT = 100_000


def list_jobs(command, queue, options) -> None:
    selection = Selection.from_options(options)
    limit = parsing.positive(options["limit"], "--limit", MAX_LIST_LIMIT) or LIST_LIMIT
    rows = selection.jobs(queue.using, queue.now()).order_by("-created_at", "-id")
    # Read in chunks (a cursor, not a list of every row) when many are asked for.
    jobs = rows[:limit].iterator(chunk_size=2000)
    if options["json"]:
        command.stdout.write(output.dumps([output.fields_of(job) for job in jobs]))
        return
    shown = [output.job_row(job) for job in jobs]
    command.stdout.write(output.table(output.LIST_COLUMNS, shown))
    more = " (the newest; --limit for more)" if len(shown) == limit else ""
    command.stdout.write(f"{len(shown)} jobs, {selection.describe()}{more}")


def show_job(command, queue, options) -> None:
    (job_id,) = parsing.job_ids([options["id"]])
    job = queue.get_job(job_id)
    if job is None:
        archived = queue.get_archived_job(job_id)
        if archived is None:
            raise CommandError(f"no job {job_id}")
        return _show_archived(command, archived, options)
    attempts = queue.get_job_attempts(job_id)
    why = queue.explain(job_id)
    if options["json"]:
        found = {**output.fields_of(job), "attempts": [output.fields_of(a) for a in attempts]}
        found["explanation"] = {
            "runnable": why.runnable,
            "reasons": [asdict(r) for r in why.reasons],
        }
        command.stdout.write(output.dumps(found))
        return
    _fields(command, output.fields_of(job))
    _trace(command, job)
    _attempts(command, attempts)
    command.stdout.write("\nwhy it waits:" if why.waiting else "")
    for reason in why.reasons:
        command.stdout.write(f"- {reason.text}")


def _fields(command, fields: dict) -> None:
    width = max(len(name) for name in fields)
    for name, value in fields.items():
        command.stdout.write(f"{name.ljust(width)}  {'-' if value is None else value}")


def _trace(command, job) -> None:
    """The trace id of the job's enqueue, to look it up in the tracing backend."""
    found = tracing.trace_id(job.trace_context)
    if found is not None:
        command.stdout.write(f"trace: {found}")


def _attempts(command, attempts) -> None:
    command.stdout.write(f"\nfailed attempts: {len(attempts)}")
    if attempts:
        columns = ("attempt", "failed_at", "ended_by", "status", "worker", "error")
        rows = [[a.attempt, a.failed_at, a.ended_by, a.status, a.worker, a.error] for a in attempts]
        command.stdout.write(output.table(columns, rows))


def _show_archived(command, archived, options) -> None:
    """An archived job, as `show_job` shows one in the table, marked archived."""
    fields = output.fields_of(archived.job)
    attempts = archived.attempts
    if options["json"]:
        found = {**fields, "attempts": [output.fields_of(a) for a in attempts]}
        found |= {"archived": True, "archived_at": archived.archived_at}
        command.stdout.write(output.dumps(found))
        return
    command.stdout.write(f"archived at {archived.archived_at.isoformat()} (jobs restore ID)")
    _fields(command, fields)
    _trace(command, archived.job)
    _attempts(command, attempts)


def stats(command, queue, options) -> None:
    name = parsing.queue_name(options.get("queue"))
    counts = counts_by_queue(queue.using, name)
    pauses = QueuePause.objects.using(queue.using)
    paused = set(
        (pauses if name is None else pauses.filter(queue_name=name)).values_list(
            "queue_name", flat=True
        )
    )
    names = sorted(set(counts) | paused)
    zero = dict.fromkeys(JobStatus.values, 0)
    found = {
        q: {
            "counts": counts.get(q, zero),
            "total": sum(counts.get(q, zero).values()),
            "paused": q in paused,
        }
        for q in names
    }
    if options["json"]:
        command.stdout.write(output.dumps(found))
        return
    columns = ("queue", *JobStatus.values, "total", "paused")
    rows = [
        [
            q,
            *(row["counts"].get(s, 0) for s in JobStatus.values),
            row["total"],
            "paused" if row["paused"] else "",
        ]
        for q, row in found.items()
    ]
    if rows:
        totals = [sum(r[i] for r in rows) for i in range(1, len(columns) - 1)]
        rows.append(["(all)", *totals, ""])
    command.stdout.write(output.table(columns, rows) if rows else "no jobs")
