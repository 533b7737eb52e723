"""Turns rows of raw SQL into `Job` instances, with the same conversions as the ORM."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..models import Job

_FIELDS = {f.column: f for f in Job._meta.concrete_fields}
_ORDER = [f.column for f in Job._meta.concrete_fields]
_ATTNAMES = [f.attname for f in Job._meta.concrete_fields]


class RowReader:
    """Builds jobs from rows whose columns are named in the cursor description.

    The converters are the ones the ORM would apply (vendor first, then field), found once
    per column layout, so a batch of rows costs no more than the conversions themselves.
    """

    def __init__(self, connection) -> None:
        self.connection = connection
        self._plans: dict[tuple[str, ...], list] = {}

    def _plan(self, columns: tuple[str, ...]):
        plan = self._plans.get(columns)
        if plan is None:
            positions = {c: i for i, c in enumerate(columns)}
            plan = []
            for column in _ORDER:
                field = _FIELDS[column]
                expression = field.get_col(Job._meta.db_table)
                converters = self.connection.ops.get_db_converters(
                    expression
                ) + field.get_db_converters(self.connection)
                plan.append((positions[column], converters, expression))
            self._plans[columns] = plan
        return plan

    def read(self, description: Sequence, rows: Iterable[Sequence]) -> list[Job]:
        columns = tuple(d[0] for d in description)
        plan = self._plan(columns)
        alias = self.connection.alias
        jobs = []
        for row in rows:
            values = []
            for position, converters, expression in plan:
                value = row[position]
                # Every converter Django has for these fields (vendor's and field's) maps
                # NULL to None: a NULL column costs an append, however many a row has.
                if value is not None:
                    for converter in converters:
                        value = converter(value, expression, self.connection)
                values.append(value)
            jobs.append(Job.from_db(alias, _ATTNAMES, values))
        return jobs
