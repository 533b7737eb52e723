"""`manage.py syncschedules`: bring the rows of the schedules declared in
`HAMMERWEB["SCHEDULES"]` in line with the settings (what `runworker` does when it starts),
for deploy scripts. Idempotent, and safe beside workers that sync at the same time."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from queues.engine.queue import JobQueue
from queues.exceptions import InvalidSchedule


class Command(BaseCommand):
    help = "Create, update and disable the rows of the schedules declared in settings."

    def add_arguments(self, parser):
        parser.add_argument("--database", default="default", help="database alias")

    def handle(self, *args, **options):
        try:
            report = JobQueue(using=options["database"]).sync_schedules()
        except InvalidSchedule as exc:
            raise CommandError(str(exc)) from exc
        if options["verbosity"] >= 1:
            self.stdout.write(f"schedules: {report}")
