"""The SQL store's claims and runs: the vendor's catalogue statements (`catalogue/<vendor>.sql`)
on raw cursors, for the claim, the fenced writes of runs and the reaper's lock, which run
thousands of times a second; the few that the ORM writes as well stay with them. A part of
`SqlStore` (`queues.store.sql.store`). See docs/design/store.md."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache

from django.db.models import F

from queues.enums import JobStatus
from queues.models import Job, QueueConfig
from queues.store.match import ClaimParams
from queues.store.sql.each import each_row


def claim_stamp(params: ClaimParams) -> dict:
    """The columns a claim sets from its parameters, by name, as its jobs then hold them:
    the claim does not return them (see the catalogue's claim_batch)."""
    return {
        "status": JobStatus.RUNNING.value,
        "started_at": params.now,
        "last_heartbeat_at": params.now,
        "lease_expires_at": params.lease_expires_at,
        "run_token": params.token,
        "claimed_by": params.claimed_by,
    }


#: Queues a `next_due_many` statement. PostgreSQL's planning time grows faster than the
#: number of copies (0.5 ms for one, 1.5 for 8, 11 for 32, 180 for 200, measured), and
#: SQLite refuses a UNION of more than 500 SELECTs.
NEXT_DUE_CHUNK = 8


@cache  # one catalogue text a vendor, at most NEXT_DUE_CHUNK counts
def _next_due_many(query: str, count: int) -> str:
    """`count` copies of the next_due `query`, each a scalar subquery on its own queue
    parameter (`queue_<i>`), numbered so that each row names its queue."""
    return "\nUNION ALL\n".join(
        f"SELECT {i} AS n, ({query.replace('%(queue)s', f'%(queue_{i})s')}) AS due"
        for i in range(count)
    )


class SqlRuns:
    """The claims and the runs of `SqlStore` (which gives `cursor`, `queries`, the parameter
    adapters, `_jobs` and `_configs`)."""

    # Claims -----------------------------------------------------------------------------
    def claimable_levels(self, queue: str, now: datetime) -> list[int]:
        with self.cursor() as cursor:
            cursor.execute(self.queries["claimable_levels"], {"queue": queue, "now": self.dt(now)})
            return [int(row[0]) for row in cursor.fetchall()]

    def next_due(self, queue: str) -> datetime | None:
        with self.cursor() as cursor:
            cursor.execute(self.queries["next_due"], {"queue": queue})
            row = cursor.fetchone()
        return self._due(row[0] if row else None)

    def next_due_many(self, queues: Sequence[str]) -> dict[str, datetime | None]:
        """`next_due` of each queue, `NEXT_DUE_CHUNK` queues a statement: the vendor's own
        query once a queue, as the rows of one UNION ALL (an idle process's look for new
        work: workers/runtime/watch.py)."""
        names = list(dict.fromkeys(queues))
        dues: dict[str, datetime | None] = dict.fromkeys(names)
        for start in range(0, len(names), NEXT_DUE_CHUNK):
            chunk = names[start : start + NEXT_DUE_CHUNK]
            values = {f"queue_{i}": name for i, name in enumerate(chunk)}
            with self.cursor() as cursor:
                cursor.execute(_next_due_many(self.queries["next_due"], len(chunk)), values)
                rows = cursor.fetchall()
            for index, value in rows:
                dues[chunk[int(index)]] = self._due(value)
        return dues

    def _due(self, value) -> datetime | None:
        if value is None:
            return None
        # The ORM's conversions of the column (SQLite returns text, MySQL naive datetimes).
        field = Job._meta.get_field("scheduled_at")
        expression = field.get_col(Job._meta.db_table)
        for convert in self.connection.ops.get_db_converters(expression):
            value = convert(value, expression, self.connection)
        return value

    def data_version(self) -> int | None:
        sql = self.queries["data_version"]
        if not sql:
            return None
        with self.connection.cursor() as cursor:
            cursor.execute(sql)
            return int(cursor.fetchone()[0])

    def claim(self, params: ClaimParams) -> list[Job]:
        values = {
            "queue": params.queue,
            "limit": params.limit,
            "now": self.dt(params.now),
            "lease_expires_at": self.dt(params.lease_expires_at),
            "token": self.uuid(params.token),
            "claimed_by": self.uuid(params.claimed_by),
        }
        name = "claim_batch"
        if params.priority is not None:
            values["priority"] = params.priority
            name = "claim_batch_at_level"
        with self.cursor() as cursor:
            cursor.execute(self.queries[name], values)
            return self.reader.read(cursor.description, cursor.fetchall(), claim_stamp(params))

    def lock_queue_limit(self, queue: str) -> QueueConfig | None:
        rows = self._configs().raw(self.queries["lock_queue_limit"], {"queue": queue})
        return next(iter(rows), None)

    def spend_rate_tokens(self, queue: str, tokens: int, refilled_at: datetime) -> None:
        self._configs().filter(queue_name=queue).update(
            rate_tokens=tokens, rate_refilled_at=refilled_at
        )

    def count_running(self, queue: str) -> int:
        return int(self._one("count_running", queue) or 0)

    def _one(self, name: str, queue: str):
        """The first column of the first row of the query `name` (None: no row)."""
        with self.cursor() as cursor:
            cursor.execute(self.queries[name], {"queue": queue})
            row = cursor.fetchone()
        return None if row is None else row[0]

    # Runs (fenced) ----------------------------------------------------------------------
    def lock_expired_leases(self, now: datetime, queue: str | None, limit: int):
        with self.cursor() as cursor:
            cursor.execute(
                self.queries["lock_expired_leases"],
                {"now": self.dt(now), "queue": queue, "limit": limit},
            )
            rows = cursor.fetchall()
        return [(self.read_uuid(job_id), self.read_uuid(token)) for job_id, token in rows]

    def running_tokens(self, ids) -> dict[uuid.UUID, uuid.UUID]:
        running = self._jobs().filter(id__in=list(ids), status=JobStatus.RUNNING)
        return dict(running.values_list("id", "run_token"))

    def complete_runs(self, runs, now) -> dict[uuid.UUID, bool]:
        rows = self._run_statements("complete_runs", {**self._runs_json(runs), "now": self.dt(now)})
        return {self.read_uuid(job_id): bool(dependents) for job_id, dependents in rows}

    def _runs_json(self, runs) -> dict:
        """`runs` ((id, token, result) triples) as the completion statements take them: a JSON
        array of triples and the ids. A job listed twice is one row to write (the join of
        ids and triples must not meet it twice)."""
        by_id = {job_id: (token, result) for job_id, token, result in runs}
        ids = self.adapt_ids(list(by_id))
        tokens = self.adapt_ids([token for token, _ in by_id.values()])
        return {
            "runs": self.results(ids, (result for _, result in by_id.values()), tokens),
            "ids": self.id_list(ids),
        }

    def complete_free_runs(self, runs, now, check=()):
        statement = self.queries["complete_free_runs"]
        if not statement:
            # The vendor cannot say which rows one UPDATE wrote: the caller completes them
            # in its transaction; the start checks are a read of their own.
            return None, self.startable_runs(check)
        params = {**self._runs_json(runs), "now": self.dt(now), "check": self.uuids(check)}
        written, startable = set(), {}
        with self.cursor() as cursor:
            cursor.execute(statement, params)
            for job_id, token in cursor.fetchall():
                if token is None:
                    written.add(self.read_uuid(job_id))
                else:
                    startable[self.read_uuid(job_id)] = self.read_uuid(token)
        if check and self.vendor != "postgresql":
            startable = self.startable_runs(check)  # read after the write: as PostgreSQL's
        return written, startable

    def lock_runs(self, ids, token) -> dict[uuid.UUID, bool]:
        rows = self._write_runs("lock_runs", ids, token, None)
        return {self.read_uuid(job_id): bool(dependents) for job_id, dependents in rows}

    def update_each(self, rows: Mapping[uuid.UUID, Mapping]) -> None:
        if rows:
            self._jobs().filter(id__in=list(rows)).update(
                **each_row(self.connection, rows, self.uuid)
            )

    def start_runs(self, ids, token, now) -> dict[uuid.UUID, tuple[bool, bool]]:
        rows = self._write_runs("start_runs", ids, token, now)
        return {
            self.read_uuid(job_id): (bool(paused), bool(batch_failed))
            for job_id, paused, batch_failed in rows
        }

    def startable_runs(self, ids) -> dict[uuid.UUID, uuid.UUID]:
        if not ids:
            return {}  # MySQL has no empty IN ()
        with self.cursor() as cursor:
            cursor.execute(self.queries["startable_runs"], {"ids": self.uuids(ids)})
            return {self.read_uuid(i): self.read_uuid(t) for i, t in cursor.fetchall()}

    def update_runs(self, ids, token, fields: Mapping) -> int:
        return self._runs(ids, token).update(**fields)

    def release_runs(self, ids, token) -> int:
        return self._runs(ids, token).update(
            status=JobStatus.PENDING,
            attempts=F("attempts") - 1,
            started_at=None,
            last_heartbeat_at=None,
            lease_expires_at=None,
            run_token=None,
        )

    def _runs(self, ids, token):
        return self._jobs().filter(id__in=list(ids), status=JobStatus.RUNNING, run_token=token)

    def _write_runs(self, name: str, ids, token, now, **extra) -> list:
        params = {"ids": self.uuids(ids), "token": self.uuid(token), "now": self.dt(now), **extra}
        return self._run_statements(name, params)

    def _run_statements(self, name: str, params: Mapping) -> list:
        """Run the catalogue's statements of `name`; the rows of the last one that has any."""
        rows: list = []
        with self.cursor() as cursor:
            for sql in self.statements[name]:
                cursor.execute(sql, params)
                if cursor.description is not None:
                    rows = cursor.fetchall()
        return rows
