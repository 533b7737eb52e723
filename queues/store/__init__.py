"""The stores under `JobQueue`: the `Store` protocol (`base`), the SQL store (`sql/`) and the
memory store (`memory/`), the SQL catalogue and the trigger-kept counters; `sql_store(using)`
picks the SQL store of the connection's vendor. See docs/design/store.md."""

from __future__ import annotations

from django.db import connections

from queues.exceptions import UnsupportedDatabase
from queues.store.base import ClaimParams, Match, Store
from queues.store.sql.mysql import MySQLStore
from queues.store.sql.postgresql import PostgresStore
from queues.store.sql.sqlite import SQLiteStore
from queues.store.sql.store import SqlStore

_STORES = {store.vendor: store for store in (PostgresStore, MySQLStore, SQLiteStore)}


def sql_store(using: str) -> SqlStore:
    vendor = connections[using].vendor
    try:
        return _STORES[vendor](using)
    except KeyError:
        raise UnsupportedDatabase(
            f"Hammerweb supports PostgreSQL, MySQL/MariaDB and SQLite, not {vendor!r}"
        ) from None


__all__ = ["ClaimParams", "Match", "SqlStore", "Store", "sql_store"]
