"""Worker tests' hooks."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    # Restarting PostgreSQL breaks every connection of the session, including those of
    # threads the tests cannot close (a live server's): the restart test goes last.
    restarts = [item for item in items if item.get_closest_marker("pgrestart")]
    if restarts:
        items[:] = [item for item in items if item not in restarts] + restarts


@pytest.fixture
def handler_runs(transactional_db):
    """The `HandlerRun` side table (see handler_runs.py), for tests with transaction=True."""
    from tests.workers.support.handler_runs import create_table, drop_table

    create_table()
    yield
    drop_table()
