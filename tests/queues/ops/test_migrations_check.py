"""`unapplied_migrations`, which `runworker` asks before it starts: the migrations of the
`queues` app (where `MIGRATION_MODULES` puts them) that the database has not applied, a
squashed one counted as applied once everything it replaces is."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from queues.ops.health import unapplied_migrations

pytestmark = pytest.mark.django_db

EMPTY = "from django.db import migrations\n\n\nclass Migration(migrations.Migration):\n    pass\n"
SQUASHED = (
    "from django.db import migrations\n\n\nclass Migration(migrations.Migration):\n"
    "    replaces = [('queues', '0001_initial'), ('queues', '0002_more')]\n"
)


def test_the_test_database_has_every_migration():
    assert unapplied_migrations() == []


def test_a_squash_counts_once_all_it_replaces_is_applied(tmp_path, settings, monkeypatch):
    package = tmp_path / "hw_squashed_migrations"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "0001_initial.py").write_text(EMPTY)  # applied: the app's own first one
    (package / "0002_more.py").write_text(EMPTY)
    (package / "0001_squashed_0002_more.py").write_text(SQUASHED)
    monkeypatch.syspath_prepend(str(tmp_path))
    settings.MIGRATION_MODULES = {"queues": "hw_squashed_migrations"}
    assert unapplied_migrations() == ["0001_squashed_0002_more", "0002_more"]
    MigrationRecorder(connection).record_applied("queues", "0002_more")  # rolled back after
    assert unapplied_migrations() == []
