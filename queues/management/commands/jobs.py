"""`manage.py jobs`: list, show, retry, cancel, delete, purge, pause, resume, stats and errors, over
the engine (`JobQueue`). The subcommands are in `queues.cli`; this module only declares
their arguments and turns the engine's refusals into `CommandError`s."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from queues.cli import actions, archive, errors, purge, reads
from queues.engine.queue import JobQueue
from queues.exceptions import QueueError

RUN = {
    "list": reads.list_jobs,
    "show": reads.show_job,
    "stats": reads.stats,
    "errors": errors.errors,
    "retry": actions.act,
    "cancel": actions.act,
    "delete": actions.act,
    "purge": purge.purge,
    "archive": archive.archive,
    "restore": archive.restore,
    "pause": actions.pause,
    "resume": actions.resume,
}


def _filters(parser, *, age: bool = True) -> None:
    parser.add_argument("--queue", help="only this queue's jobs")
    parser.add_argument(
        "--status", action="append", help="only jobs in this status (repeat, or A,B)"
    )
    if age:
        parser.add_argument(
            "--older-than", "--age", metavar="DURATION", help="created longer ago (30d, 12h)"
        )
        parser.add_argument("--newer-than", metavar="DURATION", help="created more recently")
    parser.add_argument("--tag", help="only jobs with this tag")


def _confirmed(parser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say what it would do; no change")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


class Command(BaseCommand):
    help = "Look at and act on jobs and queues: list, show, retry, cancel, delete, purge, ..."

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help="database alias")
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        listing = sub.add_parser("list", help="list jobs, newest first")
        _filters(listing)
        listing.add_argument("--limit", type=int, help="at most this many (default 50)")
        listing.add_argument("--json", action="store_true", help="a JSON array of jobs")

        show = sub.add_parser("show", help="one job: every field and its failed attempts")
        show.add_argument("id")
        show.add_argument("--json", action="store_true")

        for name, does in (
            ("retry", "back to Pending, due now"),
            ("cancel", "fail for good (Pending or Running jobs)"),
            ("delete", "delete (any job but a Running one)"),
        ):
            action = sub.add_parser(name, help=f"{does}: job ids, or a filter's jobs")
            action.add_argument("ids", nargs="*", metavar="ID")
            _filters(action)
            _confirmed(action)

        purging = sub.add_parser("purge", help="delete jobs that finished long enough ago")
        purging.add_argument("--older-than", required=True, metavar="DURATION")
        _filters(purging, age=False)
        purging.add_argument("--batch-size", type=int, help="ids per transaction (1000)")
        _confirmed(purging)

        archiving = sub.add_parser(
            "archive", help="move jobs that finished long enough ago to the archive"
        )
        archiving.add_argument(
            "--older-than",
            metavar="DURATION",
            help='finished longer ago (30d, 12h; default HAMMERWEB["ARCHIVE_AFTER"])',
        )
        archiving.add_argument("--queue", help="only this queue's jobs")
        archiving.add_argument("--limit", type=int, help="at most this many jobs")
        archiving.add_argument("--batch-size", type=int, help="jobs per transaction (1000)")
        archiving.add_argument(
            "--vacuum",
            action="store_true",
            help="then let PostgreSQL reclaim the deleted rows (VACUUM ANALYZE the jobs table)",
        )
        archiving.add_argument(
            "--dry-run", action="store_true", help="count what it would archive; no change"
        )
        restoring = sub.add_parser("restore", help="put archived jobs back as they were")
        restoring.add_argument("ids", nargs="+", metavar="ID")

        pause = sub.add_parser("pause", help="stop workers claiming a queue's jobs")
        pause.add_argument("queue")
        pause.add_argument("--reason")
        pause.add_argument("--by", help="who paused it")
        resume = sub.add_parser("resume", help="let workers claim a paused queue's jobs")
        resume.add_argument("queue")
        resume.add_argument("--by", help="who resumed it")

        stats = sub.add_parser("stats", help="jobs per queue and status")
        stats.add_argument("--queue")
        stats.add_argument("--json", action="store_true")
        found = sub.add_parser("errors", help="failed attempts grouped by error, in a window")
        found.add_argument("--window", choices=("1h", "24h", "7d"), default="24h")
        found.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        queue = JobQueue(using=options["database"])
        try:
            RUN[options["subcommand"]](self, queue, options)
        except QueueError as exc:  # an engine refusal that the checks could not foresee
            raise CommandError(str(exc)) from exc
        except KeyboardInterrupt:
            # Each page is its own transaction: those done stay done, the one under way
            # rolled back.
            raise CommandError("interrupted: the pages done are committed, nothing else") from None
