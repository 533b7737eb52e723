"""The database side of the queue: one dialect per vendor around its SQL catalogue."""

from .dialects import Dialect, dialect_for

__all__ = ["Dialect", "dialect_for"]
