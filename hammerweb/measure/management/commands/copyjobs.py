"""`manage.py copyjobs --count 900000`: grow a table that `filljobs` filled, inside the database.

`filljobs` builds each row in Python; on a busy machine that is a few hundred jobs a second.
This copies jobs already there (a sample of the mix `filljobs` made, so the same mix), with
their tags, each copy with a new id and its times moved back by up to an hour, in statements
the database runs alone: tens of thousands of jobs a second. The copies go through the same
triggers as any insert, so the counts stay exact.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

from queues.models import Job, JobTag

#: Per vendor: a new id, a shift in whole seconds, and a time moved back by the shift.
VENDORS = {
    "postgresql": (
        "gen_random_uuid()",
        "floor(random() * 3600)::int",
        "{} - make_interval(secs => s.shift)",
    ),
    "mysql": ("UUID()", "FLOOR(RAND() * 3600)", "{} - INTERVAL s.shift SECOND"),
    "sqlite": (
        "lower(hex(randomblob(16)))",
        "abs(random() % 3600)",
        "strftime('%Y-%m-%d %H:%M:%f', {}, '-' || s.shift || ' seconds')",
    ),
}


class Command(BaseCommand):
    help = "Copy COUNT existing jobs (with their tags) under new ids, inside the database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--count", type=int, required=True)
        parser.add_argument("--chunk", type=int, default=50_000)

    def handle(self, *args, count: int, chunk: int, **options) -> None:
        if not Job.objects.exists():
            raise CommandError("no jobs to copy: run `manage.py filljobs` first")
        new_id, shift, moved = VENDORS[connection.vendor]
        q = connection.ops.quote_name
        columns, values = [], []
        for field in Job._meta.concrete_fields:
            columns.append(q(field.column))
            if field.primary_key:
                values.append("s.nid")
            elif field.get_internal_type() == "DateTimeField":
                values.append(moved.format(f"j.{q(field.column)}"))
            else:
                values.append(f"j.{q(field.column)}")
        jobs, tags = q(Job._meta.db_table), q(JobTag._meta.db_table)
        statements = [
            "DROP TABLE IF EXISTS fill_copies",
            f"CREATE TEMPORARY TABLE fill_copies AS SELECT id, {new_id} AS nid, {shift} AS shift"
            f" FROM {jobs} LIMIT %s",
            f"INSERT INTO {jobs} ({', '.join(columns)}) SELECT {', '.join(values)}"
            f" FROM fill_copies s JOIN {jobs} j ON j.id = s.id",
            f"INSERT INTO {tags} (job_id, tag, queue_name, created_at, priority)"
            f" SELECT s.nid, j.tag, j.queue_name, {moved.format('j.created_at')}, j.priority"
            f" FROM fill_copies s JOIN {tags} j ON j.job_id = s.id",
            "DROP TABLE fill_copies",
        ]
        started, done = time.monotonic(), 0
        while done < count:
            size = min(chunk, count - done)
            with transaction.atomic(), connection.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql, [size] if "%s" in sql else None)
            done += size
            rate = done / (time.monotonic() - started)
            self.stdout.write(f"{done:,} jobs copied ({rate:,.0f}/s)")
        self.stdout.write(self.style.SUCCESS(f"{Job.objects.count():,} jobs in the table"))
