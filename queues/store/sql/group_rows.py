"""A batch's or workflow's row locked and written by its primary key, as each write of a
worker's outcomes does for every group they reach. Through the ORM, compiling these two
statements cost more of the writer's CPU than their round trips (about 370 and 270 µs a
write on PostgreSQL and MariaDB, measured): the locking read is compiled by the ORM once a
model and database and run with each id, and the update is built from the fields' own
adaptation of their values, as the ORM's would be."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import connections
from django.db.transaction import TransactionManagementError

from queues.store.match import Group

#: {(model, database alias, vendor): (SQL, its query, its columns, their field names)}: no
#: connection in them (a thread's own compiles each call's converters, cheaply).
_LOCKS: dict[tuple, tuple] = {}


def lock_row(model: type[Group], using: str, pk: uuid.UUID) -> Group | None:
    """The row of `model` whose primary key is `pk`, locked until the transaction ends
    (where the database locks rows: not SQLite, whose write lock is the database's), or
    None. Called in a transaction, as `select_for_update` must be."""
    connection = connections[using]
    if connection.features.has_select_for_update and connection.get_autocommit():
        raise TransactionManagementError("a group row is locked in a transaction only")
    key = (model, using, connection.vendor)
    compiled = _LOCKS.get(key)
    if compiled is None:
        compiled = _LOCKS[key] = _compile_lock(model, using)
    sql, query, columns, names = compiled
    with connection.cursor() as cursor:
        cursor.execute(sql, [model._meta.pk.get_db_prep_value(pk, connection)])
        rows = cursor.fetchall()
    if not rows:
        return None
    compiler = query.get_compiler(using)
    converters = compiler.get_converters(columns)
    if converters:
        rows = list(compiler.apply_converters(rows, converters))
    return model.from_db(using, names, rows[0])


def _compile_lock(model: type[Group], using: str) -> tuple:
    query = model.objects.using(using).select_for_update().filter(pk=uuid.UUID(int=0))
    query = query.order_by().query
    compiler = query.get_compiler(using)
    sql, params = compiler.as_sql()
    if len(params) != 1:  # the id is the one parameter this caching can stand for
        raise AssertionError(f"the locking read of {model.__name__} takes {params!r}")
    columns = [column for column, _, _ in compiler.select]
    return sql, query, columns, [column.target.attname for column in columns]


def update_row(model: type[Group], using: str, pk: uuid.UUID, fields: Mapping[str, Any]) -> int:
    """Set `fields` (by field name) on the row of `model` whose primary key is `pk`: the
    number of rows written."""
    if not fields:
        return 0
    connection = connections[using]
    quote = connection.ops.quote_name
    meta = model._meta
    assignments, params = [], []
    for name, value in fields.items():
        if hasattr(value, "resolve_expression"):  # the ORM's to resolve, not this
            raise TypeError(f"{name}: a value, not an expression ({value!r})")
        field = meta.get_field(name)
        assignments.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    params.append(meta.pk.get_db_prep_value(pk, connection))
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} "
        f"WHERE {quote(meta.pk.column)} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
