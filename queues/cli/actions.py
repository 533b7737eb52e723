"""The writing subcommands of `manage.py jobs`: `retry`, `cancel` and `delete` (of job ids,
or of a filter's jobs after a count and a confirmation), `pause` and `resume`. Jobs are acted
on a page of ids per transaction through `queues.ops.acting`; `--dry-run` asks the engine's
rules (`transitions`) what it would do and writes nothing. See docs/design/cli.md."""

from __future__ import annotations

import sys
from collections import Counter

from django.core.management.base import CommandError

from queues.cli import output, parsing
from queues.cli.selection import Selection
from queues.engine import transitions
from queues.models import Job
from queues.ops import acting
from queues.ops.purging import BATCH_SIZE, pages

ACTIONS = {name: (word, rule) for name, (word, rule, _) in acting.ACTIONS.items()}


def confirm(command, options, question: str) -> None:
    """Go ahead with --yes, or after "y" on a terminal; otherwise nothing is done."""
    if options["yes"]:
        return
    if not sys.stdin.isatty():
        raise CommandError(f"{question}: add --yes to go ahead, or --dry-run to see what it does")
    if input(f"{question}? [y/N] ").strip().lower() not in ("y", "yes"):
        raise CommandError("not confirmed; nothing changed")


def act(command, queue, options) -> None:
    """`retry`, `cancel` or `delete` of the given ids or of a filter's jobs."""
    name = options["subcommand"]
    ids = parsing.job_ids(options["ids"])
    selection = Selection.from_options(options)
    if ids and not selection.is_empty:
        raise CommandError("give job ids or a filter, not both")
    if ids:
        _by_ids(command, queue, options, name, ids)
        return
    if selection.is_empty:
        raise CommandError(
            f"{name}: give job ids, or a filter (--queue, --status, --older-than, --newer-than)"
        )
    _by_filter(command, queue, options, name, selection)


def _by_ids(command, queue, options, name, ids) -> None:
    done_word, rule = ACTIONS[name]
    found = Job.objects.using(queue.using).in_bulk(ids)
    missing = [str(job_id) for job_id in ids if job_id not in found]
    if missing:
        raise CommandError(f"no job {', '.join(missing)}; nothing changed")
    refusals = [r for r in (transitions.refusal(rule, found[i]) for i in ids) if r is not None]
    if refusals:
        raise CommandError("; ".join(refusals) + "; nothing changed")
    if options["dry_run"]:
        command.stdout.write(f"dry run: would have {done_word} {len(ids)} jobs; nothing changed")
        return
    tally: Counter = Counter()
    for start in range(0, len(ids), BATCH_SIZE):
        tally += acting.act_on_page(queue, name, ids[start : start + BATCH_SIZE])
    _report(command, name, tally)


def _by_filter(command, queue, options, name, selection: Selection) -> None:
    done_word, rule = ACTIONS[name]
    now = queue.now()
    rows = selection.jobs(queue.using, now)
    count = rows.count()
    command.stdout.write(f"{count:,} jobs match ({selection.describe()})")
    if count == 0:
        return
    if options["dry_run"]:
        reasons: Counter = Counter()
        would = 0
        for ids in pages(rows):
            for job in rows.filter(pk__in=ids).only("id", "status", "cron_schedule"):
                if transitions.refusal(rule, job) is None:
                    would += 1
                else:
                    reasons[job.status] += 1
        skipped = ", ".join(f"{n:,} {status}" for status, n in sorted(reasons.items()))
        command.stdout.write(
            f"dry run: would have {done_word} {would:,} jobs"
            + (f", skipped {skipped} (the action does not apply)" if skipped else "")
            + "; nothing changed"
        )
        return
    confirm(command, options, f"{name} {count:,} jobs")
    tally = Counter()
    progress = output.Progress(command.stderr, name)
    for ids in pages(rows):
        # Asked again of the locked rows: a job that changed since it was read is acted on
        # only if it still matches.
        tally += acting.act_on_page(queue, name, ids, lambda job: selection.matches(job, now))
        progress.note(acting.summary(name, tally))
    progress.done(acting.summary(name, tally))
    _report(command, name, tally)


def _report(command, name: str, tally: Counter) -> None:
    command.stdout.write(acting.summary(name, tally))


def pause(command, queue, options) -> None:
    name = parsing.queue_name(options["queue"], "QUEUE")
    queue.pause_queue(name, paused_by=options["by"], reason=options["reason"])
    command.stdout.write(f"paused {name!r}")


def resume(command, queue, options) -> None:
    name = parsing.queue_name(options["queue"], "QUEUE")
    if not queue.is_queue_paused(name):
        command.stdout.write(f"{name!r} was not paused")
        return
    queue.resume_queue(name, resumed_by=options["by"])
    command.stdout.write(f"resumed {name!r}")
