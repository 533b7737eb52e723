"""The SQL catalogue: one file per vendor, each a list of named queries (a block headed
``-- name: <query_name>``, its comments, then the statement); every vendor file defines the
same names. Parameters use Django's ``%(name)s`` placeholders, so a literal ``%`` is ``%%``.
See docs/design/store.md."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

VENDORS = ("postgresql", "mysql", "sqlite")
_HEADER = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
#: Separates the statements of a block that holds several (DDL such as the count triggers).
STATEMENT_BREAK = "-- statement"


def parse(text: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    parts = _HEADER.split(text)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [
            line
            for line in body.splitlines()
            if not line.lstrip().startswith("--") or line.strip() == STATEMENT_BREAK
        ]
        sql = "\n".join(lines).strip().rstrip(";").strip()
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        queries[name] = sql
    return queries


@cache
def queries_for(vendor: str) -> dict[str, str]:
    if vendor not in VENDORS:
        raise ValueError(f"no SQL catalogue for vendor {vendor!r}")
    return parse((Path(__file__).with_name(f"{vendor}.sql")).read_text())


def statements(sql: str) -> list[str]:
    """The statements of a block, split at its `-- statement` lines."""
    parts = (part.strip().rstrip(";").strip() for part in sql.split(STATEMENT_BREAK))
    return [part for part in parts if part]


def run(connection, name: str, params: dict | None = None) -> None:
    """Execute every statement of the block `name` for `connection`'s vendor (DDL blocks
    such as the count triggers; a comment-only block does nothing), each with `params`."""
    with connection.cursor() as cursor:
        for sql in statements(queries_for(connection.vendor)[name]):
            cursor.execute(sql, params)


def reinstall_operations(block: str):
    """`(install, drop)` for a migration's RunPython: the blocks `drop_<block>` then
    `install_<block>` of the migrating connection's vendor, and `drop_<block>` to reverse."""

    def install(apps, schema_editor) -> None:
        run(schema_editor.connection, f"drop_{block}")
        run(schema_editor.connection, f"install_{block}")

    def drop(apps, schema_editor) -> None:
        run(schema_editor.connection, f"drop_{block}")

    return install, drop
