from __future__ import annotations

import pytest

from queues.sql import VENDORS, parse, queries_for


def test_every_vendor_defines_the_same_queries():
    names = {vendor: set(queries_for(vendor)) for vendor in VENDORS}
    reference = names["postgresql"]
    assert reference, "the catalogue is empty"
    for vendor, defined in names.items():
        assert defined == reference, f"{vendor} differs: {defined ^ reference}"


def test_each_query_has_a_statement():
    for vendor in VENDORS:
        for name, sql in queries_for(vendor).items():
            assert sql.split()[0].upper() in {"SELECT", "UPDATE", "WITH"}, (vendor, name)


def test_a_name_defined_twice_is_refused():
    with pytest.raises(ValueError, match="twice"):
        parse("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")
