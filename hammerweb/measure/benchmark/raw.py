"""The raw-SQL limit: the same claim-and-complete loop as Hammerweb's, on the plain driver
(psycopg, mysqlclient or sqlite3) with no Django in the loop. Hammerweb's figures are read
against it: whatever the engine adds on top of the SQL itself shows as the gap."""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime, timedelta

from queues.store.catalogue import queries_for

LEASE = timedelta(minutes=5)

_COMPLETE = {
    "postgresql": (
        "UPDATE queues_job SET status = 'Completed', completed_at = %(now)s, run_token = NULL,"
        " lease_expires_at = NULL WHERE id = ANY(%(ids)s) AND status = 'Running'"
        " AND run_token = %(token)s"
    ),
    "mysql": (
        "UPDATE queues_job SET status = 'Completed', completed_at = %(now)s, run_token = NULL,"
        " lease_expires_at = NULL WHERE id IN %(ids)s AND status = 'Running'"
        " AND run_token = %(token)s"
    ),
    "sqlite": (
        "UPDATE queues_job SET status = 'Completed', completed_at = %(now)s, run_token = NULL,"
        " lease_expires_at = NULL WHERE id IN (SELECT value FROM json_each(%(ids)s))"
        " AND status = 'Running' AND run_token = %(token)s"
    ),
}
_MYSQL_CLAIM_UPDATE = (
    "UPDATE queues_job SET status = 'Running', attempts = attempts + 1, started_at = %(now)s,"
    " last_heartbeat_at = %(now)s, lease_expires_at = %(lease)s, run_token = %(token)s,"
    " claimed_by = %(claimed_by)s WHERE id IN %(ids)s"
)


class RawLoop:
    """Claims `batch` jobs and completes them with one statement, until the queue is empty."""

    def __init__(self, vendor: str, settings: dict) -> None:
        self.vendor = vendor
        self.settings = settings
        self.claim_sql = queries_for(vendor)["claim_batch"]
        self.complete_sql = _COMPLETE[vendor]
        # The claim stamps a worker process, as runworker's claims do.
        self.claimed_by = uuid.uuid4()

    def run(self, queue: str, batch: int) -> tuple[int, float]:
        conn = self._connect()
        try:
            began = time.perf_counter()
            done = 0
            while True:
                n = self._claim_and_complete(conn, queue, batch)
                if not n:
                    break
                done += n
            return done, time.perf_counter() - began
        finally:
            conn.close()

    # Connections ------------------------------------------------------------------------
    def _connect(self):
        s = self.settings
        if self.vendor == "postgresql":
            import psycopg

            return psycopg.connect(
                dbname=s["NAME"],
                user=s.get("USER") or None,
                password=s.get("PASSWORD") or None,
                host=s.get("HOST") or None,
                port=s.get("PORT") or None,
                autocommit=True,
            )
        if self.vendor == "mysql":
            import MySQLdb

            return MySQLdb.connect(
                db=s["NAME"],
                user=s.get("USER") or "",
                passwd=s.get("PASSWORD") or "",
                host=s.get("HOST") or "localhost",
                port=int(s.get("PORT") or 3306),
                charset="utf8mb4",
                autocommit=False,
            )
        import sqlite3

        conn = sqlite3.connect(s["NAME"], isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    # One batch --------------------------------------------------------------------------
    def _claim_and_complete(self, conn, queue: str, batch: int) -> int:
        now = datetime.now(UTC)
        token = uuid.uuid4()
        if self.vendor == "postgresql":
            params = {
                "queue": queue,
                "limit": batch,
                "now": now,
                "lease_expires_at": now + LEASE,
                "token": token,
                "claimed_by": self.claimed_by,
            }
            # One statement, in autocommit as Hammerweb's strict claim on PostgreSQL.
            ids = [row[0] for row in conn.execute(self.claim_sql, params).fetchall()]
            if ids:
                conn.execute(self.complete_sql, {"now": now, "ids": ids, "token": token})
            return len(ids)
        if self.vendor == "mysql":
            naive = now.replace(tzinfo=None)
            cursor = conn.cursor()
            cursor.execute(self.claim_sql, {"queue": queue, "limit": batch, "now": naive})
            ids = [row[0] for row in cursor.fetchall()]
            if ids:
                cursor.execute(
                    _MYSQL_CLAIM_UPDATE,
                    {
                        "now": naive,
                        "lease": naive + LEASE,
                        "token": str(token),
                        "claimed_by": str(self.claimed_by),
                        "ids": ids,
                    },
                )
            conn.commit()
            if ids:
                cursor.execute(self.complete_sql, {"now": naive, "ids": ids, "token": str(token)})
                conn.commit()
            return len(ids)
        return self._sqlite(conn, queue, batch, now, token)

    def _sqlite(self, conn, queue, batch, now, token) -> int:
        import json

        def text(dt):
            return dt.replace(tzinfo=None).isoformat(" ")

        claim = re.sub(r"%\((\w+)\)s", r":\1", self.claim_sql)
        complete = re.sub(r"%\((\w+)\)s", r":\1", self.complete_sql)
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(
            claim,
            {
                "queue": queue,
                "limit": batch,
                "now": text(now),
                "lease_expires_at": text(now + LEASE),
                "token": token.hex,
                "claimed_by": self.claimed_by.hex,
            },
        ).fetchall()
        conn.execute("COMMIT")
        ids = [row[0] for row in rows]
        if ids:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(complete, {"now": text(now), "ids": json.dumps(ids), "token": token.hex})
            conn.execute("COMMIT")
        return len(ids)
