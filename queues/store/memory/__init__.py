"""The memory store under `TestQueue`: the `Store` protocol in dicts, with a database's
behaviour (each operation atomic, a transaction undone when it raises, values stored as a
database stores them). See docs/design/store.md."""

from __future__ import annotations

from queues.store.memory.store import MemoryStore

__all__ = ["MemoryStore"]
