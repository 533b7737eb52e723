"""MySQL/MariaDB: a claim is two statements in one transaction (no UPDATE ... RETURNING), and
deadlocks and lock wait timeouts are worth a retry. The engine needs READ COMMITTED (see
`session`). See docs/design/store.md."""

from __future__ import annotations

from django.db import DatabaseError

from queues.store.base import ClaimParams
from queues.store.sql.store import SqlStore

# Deadlock, lock wait timeout.
_RETRYABLE = {1213, 1205}


class MySQLStore(SqlStore):
    vendor = "mysql"

    def is_retryable(self, exc: DatabaseError) -> bool:
        args = getattr(exc, "args", ()) or ()
        return bool(args) and args[0] in _RETRYABLE

    def claim(self, params: ClaimParams):
        # The base claim's locking read (its lease, token and claimant parameters go unused),
        # then mark_claimed marks the rows it locked (see mysql.sql).
        jobs = super().claim(params)
        if not jobs:
            return jobs
        with self.cursor() as cursor:
            cursor.execute(
                self.queries["mark_claimed"],
                {
                    "ids": self.uuids([job.id for job in jobs]),
                    "now": self.dt(params.now),
                    "lease_expires_at": self.dt(params.lease_expires_at),
                    "token": self.uuid(params.token),
                    "claimed_by": self.uuid(params.claimed_by),
                },
            )
        for job in jobs:  # the rest as the base claim stamped it (`claim_stamp`)
            job.attempts += 1
        return jobs
