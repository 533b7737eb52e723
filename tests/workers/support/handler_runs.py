"""A side table for handlers that write with the ORM, as a user's do: one `HandlerRun` row
per run of a job. The model belongs to no installed app (no migration); the
`handler_runs` fixture creates its table on the test database and drops it afterwards."""

from __future__ import annotations

import os
from collections import Counter

from django.db import connection, models


class HandlerRun(models.Model):
    job_id = models.UUIDField(db_index=True)
    attempt = models.PositiveIntegerField()
    pid = models.PositiveIntegerField()

    class Meta:
        app_label = "hammerweb_tests"
        db_table = "hammerweb_test_handler_run"
        managed = False

    def __str__(self) -> str:
        return f"run of job {self.job_id} (attempt {self.attempt}, pid {self.pid})"


def record_run(job) -> None:
    """What a handler writes: one row for this run."""
    HandlerRun.objects.create(job_id=job.id, attempt=job.attempts, pid=os.getpid())


def runs_per_job() -> Counter:
    return Counter(HandlerRun.objects.values_list("job_id", flat=True))


def backend_id(conn=connection) -> int:
    """The server's id of this thread's connection (opening it if need be)."""
    with conn.cursor() as cursor:
        if conn.vendor == "postgresql":
            cursor.execute("SELECT pg_backend_pid()")
        else:
            cursor.execute("SELECT CONNECTION_ID()")
        return cursor.fetchone()[0]


def kill_backend(backend: int, conn=connection) -> None:
    """End another session of the server, as a restart would end them all."""
    with conn.cursor() as cursor:
        if conn.vendor == "postgresql":
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
        else:
            cursor.execute(f"KILL {int(backend)}")


def create_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {HandlerRun._meta.db_table}")
    with connection.schema_editor() as editor:
        editor.create_model(HandlerRun)


def drop_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {HandlerRun._meta.db_table}")
