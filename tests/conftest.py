"""Shared fixtures. The database is the one DATABASE_URL names (SQLite by default); `make test`
runs the suite once per database."""

from __future__ import annotations

import itertools
import os
import uuid

import pytest
from django.db import connection

_counter = itertools.count()


def unique_queue(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"


@pytest.fixture
def vendor() -> str:
    return connection.vendor
