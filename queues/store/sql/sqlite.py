"""SQLite: no array parameter (ids go as JSON, read with `json_each`), and a lock that
outlived the busy timeout is worth a retry. The engine's transactions begin IMMEDIATE (see
`session`). See docs/design/store.md."""

from __future__ import annotations

import json

from django.db import DatabaseError, OperationalError

from queues.store.sql.store import SqlStore


class SQLiteStore(SqlStore):
    vendor = "sqlite"

    def id_list(self, adapted):
        # The catalogue reads the list with json_each.
        return json.dumps(adapted)

    def is_retryable(self, exc: DatabaseError) -> bool:
        # The busy timeout already waited; a lock that outlived it is worth one more go.
        return isinstance(exc, OperationalError) and "locked" in str(exc)
