"""What the tables share: the widths of columns that rules elsewhere check (queue names,
tags), and the partial indexes that stay portable: partial on PostgreSQL and SQLite (or on
PostgreSQL alone), the same columns without the condition elsewhere. See docs/design/tables.md."""

from __future__ import annotations

from django.db import models

#: A queue name's most characters (every `queue_name` column; `queues.validation` checks it).
MAX_QUEUE_NAME_LENGTH = 255
#: A tag's most characters (the `JobTag.tag` column; `queues.tags` checks it).
MAX_TAG_LENGTH = 100


class _Portable:
    """The condition of a partial index, dropped where the database has no partial indexes;
    deconstructed as `queues.models.<name>`, the path the migrations import."""

    def _get_condition_sql(self, model, schema_editor):
        if not schema_editor.connection.features.supports_partial_indexes:
            return None
        return super()._get_condition_sql(model, schema_editor)

    def deconstruct(self):
        _path, args, kwargs = super().deconstruct()
        return f"queues.models.{type(self).__name__}", args, kwargs


class PortableIndex(_Portable, models.Index):
    """A partial index where the database has them (PostgreSQL, SQLite); elsewhere (MySQL,
    MariaDB) the same columns without the condition, instead of no index at all."""


class PostgresPartialIndex(_Portable, models.Index):
    """Partial on PostgreSQL only. PostgreSQL writes an entry in every index for each new row
    version an UPDATE makes (whichever columns changed), so there the condition spares the
    writes of a run; MySQL, MariaDB and SQLite write only the indexes whose columns change,
    and SQLite's planner takes a partial index only for a query that repeats its terms (a
    query for `status = 'Pending'` does not repeat `status <> 'Running'`)."""

    def _get_condition_sql(self, model, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return None
        return super()._get_condition_sql(model, schema_editor)


class PortableUniqueConstraint(_Portable, models.UniqueConstraint):
    """A unique index over a nullable column, partial (`IS NOT NULL`) where the database has
    partial indexes: rows without a value then cost it nothing, not even on the writes of
    their runs. MySQL and MariaDB get the index without the condition, which means the same
    there: a unique index takes any number of NULLs."""

    def check(self, model, connection):
        # Django warns that MySQL drops the condition (models.W036): here that is the point.
        return [e for e in super().check(model, connection) if e.id != "models.W036"]
