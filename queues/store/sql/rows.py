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


#: The JSON texts most JSON columns of a claimed job hold (no tags, meta or dependencies),
#: made without a JSON decode: a new empty list or dict for each row, as the decode gives.
_EMPTIES = {"[]": list, "{}": dict}


class RowReader:
    """Builds jobs from rows whose columns are named in the cursor description.

    The converters are the ones the ORM would apply (vendor first, then field), found once
    per column layout, so a batch of rows costs no more than the conversions themselves.
    """

    def __init__(self, connection) -> None:
        self.connection = connection
        self._plans: dict[tuple[str, ...], list] = {}

    def _plan(self, columns: tuple[str, ...], stamped: tuple[str, ...] = ()):
        """For a column layout: a getter of the fields' values in field order, and the
        (index, converters, expression, empties) of each field that has converters (empties:
        a JSON field's `_EMPTIES`)."""
        plan = self._plans.get((columns, stamped))
        if plan is None:
            # A stamped column's value follows the row's (`read`): a Python value already. A
            # column the rows hold is read from them.
            positions = {c: len(columns) + i for i, c in enumerate(stamped)}
            positions.update((c, i) for i, c in enumerate(columns))
            missing = [column for column in _ORDER if column not in positions]
            if missing:
                raise ValueError(f"the rows have no {', '.join(missing)} for a Job")
            converted = []
            for index, column in enumerate(_ORDER):
                if column in stamped and column not in columns:
                    continue
                field = _FIELDS[column]
                expression = field.get_col(Job._meta.db_table)
                converters = self.connection.ops.get_db_converters(
                    expression
                ) + field.get_db_converters(self.connection)
                if converters:
                    empties = _EMPTIES if field.get_internal_type() == "JSONField" else None
                    converted.append((index, converters, expression, empties))
            plan = itemgetter(*(positions[column] for column in _ORDER)), converted
            self._plans[columns, stamped] = plan
        return plan

    def read(
        self, description: Sequence, rows: Iterable[Sequence], stamp: dict | None = None
    ) -> list[Job]:
        """The jobs of `rows`; `stamp` gives the columns (by name) that the rows leave out,
        the same for every row (the values a claim set from its parameters)."""
        columns = tuple(d[0] for d in description)
        stamped = tuple(stamp) if stamp else ()
        getter, converted = self._plan(columns, stamped)
        extra = tuple(stamp.values()) if stamp else ()
        alias = self.connection.alias
        build = _builder()
        jobs = []
        for row in rows:
            values = list(getter((*row, *extra) if extra else row))  # every field, in C
            for index, converters, expression, empties in converted:
                value = values[index]
                # Every converter Django has for these fields (vendor's and field's) maps
                # NULL to None: a NULL column costs nothing, however many a row has.
                if empties is not None and type(value) is str and value in empties:
                    values[index] = empties[value]()  # a job's tags, meta, depends_on
                elif value is not None:
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
