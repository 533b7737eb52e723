"""The stores under `JobQueue` (the `Store` protocol of `base`): the SQL store, one small
module per vendor around its catalogue, and `sql_store(using)`, which picks the vendor's."""

from __future__ import annotations

from django.db import connections

from ..exceptions import UnsupportedDatabase
from .base import ClaimParams, Match, Store
from .mysql import MySQLStore
from .postgresql import PostgresStore
from .sql import SqlStore
from .sqlite import SQLiteStore

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
