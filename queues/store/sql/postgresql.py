"""PostgreSQL: the catalogue's statements on server-binding cursors (prepared by psycopg), ids
as one `uuid[]` text parameter, the strict claim in autocommit, and which errors are worth
a retry. See docs/design/store.md."""

from __future__ import annotations

import json
from base64 import b64encode

from django.db import DatabaseError

from queues.models import ArchivedJob, Job
from queues.store.sql import session
from queues.store.sql.store import INSERT_BYTES, SqlStore

#: From this many new jobs an insert is a COPY (`PostgresStore.insert_job_rows`): below, its
#: extra round trip costs more than it saves (equal at about 20 jobs, measured).
STREAM_FROM = 32
#: The COPY of new jobs: each row the values of the catalogue's insert_jobs rows
#: (`SqlStore.job_values`), to the model's columns in its order.
STREAM_JOBS = "COPY queues_job ({}) FROM STDIN".format(
    ", ".join(field.column for field in Job._meta.concrete_fields)
)
# Deadlock, serialization failure, lock not available.
_RETRYABLE = {"40P01", "40001", "55P03"}


def _text(value) -> str | None:
    return None if value is None else str(value)


class PostgresStore(SqlStore):
    vendor = "postgresql"
    claim_is_one_statement = True

    def cursor(self):
        # Django's cursors bind parameters client-side, so every execution is parsed and
        # planned anew. The catalogue's statements are few and run thousands of times a
        # second, so they get a server-binding cursor that prepares them (see
        # engine/session.py), wrapped in Django's CursorWrapper: the same error translation
        # and broken-transaction checks.
        return session.server_cursor(self.connection)

    def id_list(self, adapted):
        # One text parameter, '{id,...}', that the server reads as uuid[] (`= ANY(...)`):
        # psycopg dumps a list of UUIDs element by element in Python, a str in C. A read of
        # 5 ids cost a third less CPU so, a write of 50 about 100 µs less (measured).
        return "{" + ",".join(map(str, adapted)) + "}"

    def insert_job_rows(self, jobs) -> None:
        # Many jobs are streamed: psycopg formats the rows in C and sends them while the
        # server parses the previous ones, each column's text as its type, where insert_jobs
        # waits for each statement of 500 rows and parses its JSON again (half the wall time
        # of a bulk enqueue, a third less of the server's CPU, measured). COPY fires the
        # statement triggers (counts, history, pickup) as an INSERT does. Through the
        # connection's execute wrappers, as every statement of a cursor goes.
        if len(jobs) < STREAM_FROM:
            super().insert_job_rows(jobs)
            return

        def copy(sql, jobs, many, context):
            # As Django's own execute: a broken transaction is refused, and its errors are
            # Django's (a taken unique slot is an IntegrityError, as from an INSERT). The
            # rows are made here: a wrapper that runs the statement again gets them again.
            self.connection.validate_no_broken_transaction()
            errors = self.connection.wrap_database_errors
            with errors, context["cursor"].cursor.copy(sql) as stream:
                for values in self.job_values(jobs):
                    stream.write_row(values)

        with self.connection.cursor() as cursor:
            cursor._execute_with_wrappers(STREAM_JOBS, list(jobs), False, copy)

    def insert_archived(self, rows: list[dict]) -> None:
        # One JSON parameter a statement (see the catalogue's insert_archived), encoded in
        # C: the packed blob as base64, the rest as Django adapts it; at most INSERT_BYTES
        # of blobs a statement (a single larger row alone).
        tags = ArchivedJob._meta.get_field("tags")
        dt = self.dt
        chunks: list[list] = [[]]
        size = 0
        for row in rows:
            data = b64encode(row["data"]).decode("ascii")
            if chunks[-1] and size + len(data) > INSERT_BYTES:
                chunks.append([])
                size = 0
            size += len(data)
            chunks[-1].append([
                str(row["id"]), row["queue_name"], row["status"], row["priority"],
                row["attempts"], dt(row["created_at"]).isoformat(),
                dt(row["finished_at"]).isoformat(), dt(row["archived_at"]).isoformat(),
                _text(row["batch_id"]), _text(row["workflow_id"]), row["unique_key"],
                tags.get_prep_value(row["tags"]), row["failures"], data,
            ])  # fmt: skip
        with self.cursor() as cursor:
            for chunk in chunks:
                if chunk:
                    params = {"rows": json.dumps(chunk, cls=tags.encoder)}
                    cursor.execute(self.queries["insert_archived"], params)

    def is_retryable(self, exc: DatabaseError) -> bool:
        return getattr(exc.__cause__, "sqlstate", None) in _RETRYABLE
