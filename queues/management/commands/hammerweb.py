"""`manage.py hammerweb health`: Hammerweb's health for cron jobs and Kubernetes probes.

Exit codes: 0 healthy; 1 a threshold is crossed (each problem on a line of its own); 3 the
database does not answer; 2 the command line is wrong (argparse's own). Without thresholds
it checks only that the database answers.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from queues.cli.parsing import queue_name_argument
from queues.ops.health import Thresholds, database_problem, first_line, queue_problems

UNHEALTHY, NO_DATABASE = 1, 3


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _seconds(text: str) -> timedelta:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be 0 or a positive number of seconds")
    return timedelta(seconds=value)


class Command(BaseCommand):
    help = "Hammerweb's operations (health: check the queues for a probe or cron)."
    # A probe runs often and must answer about the database, not fail in a model check
    # that needs it (SQLite's JSON support); `manage.py check` is the place for those.
    requires_system_checks = []

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        health = actions.add_parser(
            "health",
            help="exit 0 if healthy, 1 if a threshold is crossed, 3 if the "
            "database does not answer",
        )
        health.add_argument(
            "--queue",
            action="append",
            type=queue_name_argument,
            dest="queues",
            metavar="QUEUE",
            help="check this queue (repeat; default: every queue with jobs)",
        )
        health.add_argument(
            "--max-backlog",
            type=_count,
            metavar="N",
            help="unhealthy when a queue has more than N pending jobs",
        )
        health.add_argument(
            "--max-due-age",
            type=_seconds,
            metavar="SECONDS",
            help="unhealthy when a queue's oldest due job has waited longer",
        )
        health.add_argument(
            "--require-worker",
            action="store_true",
            help="unhealthy when a queue (with --queue: each one named; "
            "otherwise each with pending jobs) has no live worker process",
        )
        health.add_argument("--database", default="default", help="database alias")

    def handle(self, *args, **options):
        using = options["database"]
        problem = database_problem(using)
        if problem:
            self.stderr.write(problem)
            sys.exit(NO_DATABASE)
        thresholds = Thresholds(
            max_backlog=options["max_backlog"],
            max_due_age=options["max_due_age"],
            require_worker=options["require_worker"],
        )
        try:
            problems = queue_problems(thresholds, options["queues"], using=using)
        except DatabaseError as exc:  # it answers, but not with Hammerweb's tables
            self.stderr.write(f"database {using!r}: {first_line(exc)} (migrated?)")
            sys.exit(NO_DATABASE)
        for line in problems:
            self.stderr.write(line)
        if problems:
            sys.exit(UNHEALTHY)
        if options["verbosity"] >= 1:
            self.stdout.write("healthy")
