"""The tests' settings: the project's (hammerweb/settings.py) plus what only tests need.

- A secret key of their own (the project has none built in).
- The measurement commands' app, so that their tests run in `make test`.
- Test databases named with `HAMMERWEB_DB_SUFFIX`, so that several runs can share one
  server; on SQLite a file, never the in-memory default (threads and processes share it).
- `HAMMERWEB_USE_TEST_DB=1`: a process the tests start (`runworker`, a server) works on the
  test database. Such processes inherit DJANGO_SETTINGS_MODULE, so they load this module.
"""

from __future__ import annotations

import os

from hammerweb.settings import *  # noqa: F403
from hammerweb.settings import DATABASES, INSTALLED_APPS, VAR_DIR

SECRET_KEY = "tests-only-secret-key-never-used-outside-the-test-suite-0123456789"

if "hammerweb.measure" not in INSTALLED_APPS:
    INSTALLED_APPS = [*INSTALLED_APPS, "hammerweb.measure"]

_suffix = os.environ.get("HAMMERWEB_DB_SUFFIX", "")
_db = DATABASES["default"]
if _db["ENGINE"].endswith("sqlite3"):
    _db["TEST"] = {"NAME": str(VAR_DIR / f"test_hammerweb{_suffix}.sqlite3")}
else:
    _db.setdefault("TEST", {})["NAME"] = f"test_{_db['NAME']}{_suffix}"

if os.environ.get("HAMMERWEB_USE_TEST_DB") == "1":
    _db["NAME"] = _db["TEST"]["NAME"]
