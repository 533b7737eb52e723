"""The tests through PgBouncer in transaction mode (`make test-pgbouncer` starts it with
scripts/start-pgbouncer and points DATABASE_URL at it). Elsewhere they skip."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.pgbouncer.pooling import through_a_pooler
from tests.workers.conftest import handler_runs  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def behind_pgbouncer(transactional_db):
    if not through_a_pooler():
        pytest.skip("needs PostgreSQL through PgBouncer in transaction mode (make test-pgbouncer)")
    connection.close()  # each test's own connections start from the pool
