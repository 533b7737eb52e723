from __future__ import annotations

import pytest

from queues.store.catalogue import VENDORS, parse, queries_for, statements


def test_every_vendor_defines_the_same_queries():
    names = {vendor: set(queries_for(vendor)) for vendor in VENDORS}
    reference = names["postgresql"]
    assert reference, "the catalogue is empty"
    for vendor, defined in names.items():
        assert defined == reference, f"{vendor} differs: {defined ^ reference}"


def test_each_query_has_a_statement():
    for vendor in VENDORS:
        for name, sql in queries_for(vendor).items():
            for statement in statements(sql):
                first = statement.split()[0].upper()
                assert first in {
                    "SELECT",
                    "UPDATE",
                    "WITH",
                    "CREATE",
                    "DROP",
                    "DELETE",
                    "INSERT",
                    "PRAGMA",  # SQLite's data_version
                    "VACUUM",  # PostgreSQL's vacuum_jobs, after an archive run
                }, (
                    vendor,
                    name,
                )


def test_a_name_defined_twice_is_refused():
    with pytest.raises(ValueError, match="twice"):
        parse("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_blocks_split_into_statements():
    [block] = parse("-- name: two\nDROP 1\n-- statement\n-- why\nCREATE 2;\n").values()
    assert statements(block) == ["DROP 1", "CREATE 2"]
