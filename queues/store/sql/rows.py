"""Turns rows of raw SQL (the catalogue's claims) into `Job` instances, with the same
conversions as the ORM, found once per column layout: a batch of rows costs no more than
the conversions themselves. See docs/design/store.md."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter

from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

from queues.models import Job

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
        """For a column layout: a getter of the fields' values in field order, and the
        (index, converters, expression) of each field that has converters."""
        plan = self._plans.get(columns)
        if plan is None:
            positions = {c: i for i, c in enumerate(columns)}
            converted = []
            for index, column in enumerate(_ORDER):
                field = _FIELDS[column]
                expression = field.get_col(Job._meta.db_table)
                converters = self.connection.ops.get_db_converters(
                    expression
                ) + field.get_db_converters(self.connection)
                if converters:
                    converted.append((index, converters, expression))
            plan = itemgetter(*(positions[column] for column in _ORDER)), converted
            self._plans[columns] = plan
        return plan

    def read(self, description: Sequence, rows: Iterable[Sequence]) -> list[Job]:
        columns = tuple(d[0] for d in description)
        getter, converted = self._plan(columns)
        alias = self.connection.alias
        build = _builder()
        jobs = []
        for row in rows:
            values = list(getter(row))  # every field, in one C call
            for index, converters, expression in converted:
                value = values[index]
                # Every converter Django has for these fields (vendor's and field's) maps
                # NULL to None: a NULL column costs nothing, however many a row has.
                if value is not None:
                    for converter in converters:
                        value = converter(value, expression, self.connection)
                    values[index] = value
            jobs.append(build(alias, values))
        return jobs


def _built(alias: str, values: list) -> Job:
    """`Job.from_db(alias, <every field>, values)` without `Model.__init__`, which costs a
    claim of 50 jobs about 0.3 ms (a setattr per field, its signals): every field is given,
    so the instance is its `__dict__` and the state `from_db` gives it. Used only while no
    `pre_init` or `post_init` receiver listens for jobs (`_builder`)."""
    job = _new(Job)
    state = ModelState()
    state.adding, state.db = False, alias
    job.__dict__["_state"] = state
    job.__dict__.update(zip(_ATTNAMES, values))
    return job


def _from_db(alias: str, values: list) -> Job:
    return Job.from_db(alias, _ATTNAMES, values)


def _builder():
    # Asked once per read, not per row: a receiver connected later is heard at the next.
    if pre_init.has_listeners(Job) or post_init.has_listeners(Job):
        return _from_db
    return _built


_new = object.__new__
