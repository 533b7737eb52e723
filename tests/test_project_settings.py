"""The project's settings (hammerweb/settings.py) as docs/howto/deploy.md sets them up: no
built-in secret key, DEBUG off unless asked for, and `check --deploy` clean for the
documented production environment. Each runs `manage.py` in a child process with the
project's settings (not the tests') on this run's test database."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
#: docs/howto/deploy.md's production environment, less the database.
PRODUCTION = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "jobs.example.com",
    "DJANGO_HTTPS": "1",
}


def _database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    scheme = "postgres" if connection.vendor == "postgresql" else "mysql"
    return f"{scheme}://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def _project(args: list[str], **env: str) -> subprocess.CompletedProcess:
    """`args` run with hammerweb.settings and only the `env` given of Django's variables."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "HAMMERWEB_"))}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "hammerweb.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_built_in_secret_key_and_debug_off_unless_asked_for():
    code = "import hammerweb.settings as s; print(repr(s.SECRET_KEY), s.DEBUG)"
    assert _project(["-c", code]).stdout.split() == ["''", "False"]
    asked = _project(["-c", code], DJANGO_DEBUG="1", DJANGO_SECRET_KEY="k")
    assert asked.stdout.split() == ["'k'", "True"]


def test_signing_without_a_secret_key_fails_clearly():
    code = (
        "import django; django.setup(); from django.core import signing; "
        "signing.dumps('x')"
    )
    result = _project(["-c", code])
    assert result.returncode != 0
    assert "The SECRET_KEY setting must not be empty" in result.stderr


@pytest.mark.django_db
def test_check_deploy_is_clean_for_the_documented_production_setup():
    url = _database_url()
    result = _project(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], DATABASE_URL=url,
        **PRODUCTION,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout

    # Each part of it counts: served over plain HTTP, with no key of its own.
    bare = _project(["manage.py", "check", "--deploy"], DATABASE_URL=url)
    for warning in ("W004", "W008", "W009", "W012", "W016"):
        assert f"security.{warning}" in bare.stderr, bare.stderr


def test_the_transaction_pooling_variable_declares_the_pool_or_leaves_it_to_detection():
    code = (
        "import hammerweb.settings as s; print(s.HAMMERWEB['PG_TRANSACTION_POOLING'], "
        "s.DATABASES['default'].get('DISABLE_SERVER_SIDE_CURSORS', False))"
    )
    url = "postgres://hammerweb@pooler.internal:6432/hammerweb"
    for value, expected in (("", ["None", "False"]), ("1", ["True", "True"]),
                            ("0", ["False", "False"])):  # fmt: skip
        result = _project(["-c", code], DATABASE_URL=url, HAMMERWEB_PG_TRANSACTION_POOLING=value)
        assert result.stdout.split() == expected, result.stderr
