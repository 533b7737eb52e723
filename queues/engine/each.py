"""One UPDATE that gives each row its own values (the outcomes of a batch: each job's result,
retry time or error): the ORM's `CASE id WHEN ... THEN ...` per column, as `bulk_update`
builds it, with the columns every row gives the same value set plainly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from django.db.models import Case, Value, When
from django.db.models.functions import Cast

from ..models import Job

#: Columns whose values are never taken for the same: JSON's True equals 1 in Python.
_ALWAYS_EACH = frozenset({"result"})


def each_row(connection, rows: Mapping[UUID, Mapping[str, Any]]) -> dict[str, Any]:
    """The `update(**...)` arguments that write `rows` ({id: fields}, the same names in each)."""
    names = next(iter(rows.values())).keys()
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
        case = Case(
            *(When(pk=job_id, then=Value(fields[name], output_field=field))
              for job_id, fields in rows.items()),
            output_field=field,
        )  # fmt: skip
        if connection.features.requires_casted_case_in_updates:
            case = Cast(case, output_field=field)
        updates[name] = case
    return updates
