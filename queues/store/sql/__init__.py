"""The SQL store: `SqlStore` (`store.py`) and its parts (claims and runs on the vendor's
catalogue, rows and upkeep through the ORM), one small subclass per vendor for what differs,
the raw-row reader, the CASE updater and the connections' set-up. See docs/design/store.md."""

from __future__ import annotations

from queues.store.sql.store import SqlStore

__all__ = ["SqlStore"]
