"""The stores under `JobQueue` (the `Store` protocol of `base`): the SQL store, one small
module per vendor around its catalogue, and `sql_store(using)`, which picks the vendor's."""

from __future__ import annotations

from django.db import connections

from queues.exceptions import UnsupportedDatabase
from queues.store.base import ClaimParams, Match, Store
from queues.store.mysql import MySQLStore
from queues.store.postgresql import PostgresStore
from queues.store.sql import SqlStore
from queues.store.sqlite import SQLiteStore

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
