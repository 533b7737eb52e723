"""One UPDATE that gives each row its own values (the outcomes of a batch: each job's result,
retry time or error): `CASE id WHEN ... THEN ... END` per column whose values differ, the
columns every row gives the same value set plainly; rendered here, not with the ORM's
`Case(When(...))`, which cost more than it saves. See docs/design/store.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from django.db.models import Expression
from django.db.models.functions import Cast

from queues.models import Job

#: Columns whose values are never taken for the same: JSON's True equals 1 in Python.
_ALWAYS_EACH = frozenset({"result"})


class EachRow(Expression):
    """`CASE id WHEN <id> THEN <value> ... END` for one column of the rows being written."""

    def __init__(self, field, pairs: list[tuple[Any, Any]]) -> None:
        super().__init__(output_field=field)
        self.pairs = pairs  # [(id, value)], both adapted for the database

    def as_sql(self, compiler, connection):
        column = connection.ops.quote_name(Job._meta.pk.column)
        whens = " ".join(["WHEN %s THEN %s"] * len(self.pairs))
        params = [param for pair in self.pairs for param in pair]
        return f"CASE {column} {whens} END", params


def each_row(connection, rows: Mapping[UUID, Mapping[str, Any]], uuid) -> dict[str, Any]:
    """The `update(**...)` arguments that write `rows` ({id: fields}, the same names in
    each); `uuid` adapts an id for the database, as the catalogue's parameters."""
    names = next(iter(rows.values())).keys()
    ids = [uuid(job_id) for job_id in rows]
    updates: dict[str, Any] = {}
    for name in names:
        values = [fields[name] for fields in rows.values()]
        first = values[0]
        if name not in _ALWAYS_EACH and all(
            type(value) is type(first) and value == first for value in values
        ):
            updates[name] = first
            continue
        field = Job._meta.get_field(name)
        prepared = [field.get_db_prep_save(value, connection) for value in values]
        expression = EachRow(field, list(zip(ids, prepared, strict=True)))
        if connection.features.requires_casted_case_in_updates:
            expression = Cast(expression, output_field=field)
        updates[name] = expression
    return updates
