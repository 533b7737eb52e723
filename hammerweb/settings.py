"""Settings for the Hammerweb project.

The database comes from ``DATABASE_URL`` (PostgreSQL, MySQL/MariaDB or SQLite); without it,
a SQLite file under ``var/``. ``HAMMERWEB_DB_SUFFIX`` gives the test database a distinct name
so that several test runs can share one server. ``HAMMERWEB_DEMO=1`` (set by ``make demo``)
installs the ``demo`` app: its sample handlers and ``manage.py demo``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-only-insecure-key-change-me")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")

# The demo app's handlers (demo/jobs.py) register in every process that installs it, so it
# is installed only where asked for: `make demo` sets HAMMERWEB_DEMO=1.
_demo = os.environ.get("HAMMERWEB_DEMO") == "1"

INSTALLED_APPS = [
    # Listed first so that its `runworker` wins over any other app's (see workers.apps).
    "workers",
    "queues",
    *(["demo"] if _demo else []),
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "hammerweb.urls"
WSGI_APPLICATION = "hammerweb.wsgi.application"
ASGI_APPLICATION = "hammerweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_suffix = os.environ.get("HAMMERWEB_DB_SUFFIX", "")
_url = os.environ.get("DATABASE_URL", "").strip()
if _url:
    _db = dj_database_url.parse(_url, conn_max_age=60, conn_health_checks=True)
else:
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(VAR_DIR / "hammerweb.sqlite3")}

if _db["ENGINE"].endswith("sqlite3"):
    # WAL lets readers (the dashboard) run beside the one writer; IMMEDIATE takes the write
    # lock at BEGIN, so a read-then-write transaction never fails to upgrade its lock; the
    # timeout makes writers wait for each other instead of failing at once.
    _db.setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL",
        }
    )
    _db["CONN_MAX_AGE"] = 0
    # A file, never the in-memory default: threads and processes must share it.
    _db["TEST"] = {"NAME": str(VAR_DIR / f"test_hammerweb{_suffix}.sqlite3")}
elif _db["ENGINE"].endswith("mysql"):
    _db.setdefault("OPTIONS", {}).update(
        {"charset": "utf8mb4", "isolation_level": "read committed"}
    )
    _db["TEST"] = {
        "NAME": f"test_{_db['NAME']}{_suffix}",
        "CHARSET": "utf8mb4",
        "COLLATION": "utf8mb4_unicode_ci",
    }
else:
    # The engine's claim and completion statements run on server-binding cursors
    # (queues.engine.postgresql); with a threshold psycopg prepares each after that many runs,
    # so PostgreSQL plans them once per connection. Django's own (client-binding) cursors
    # never prepare. Behind a transaction-mode pooler without prepared-statement support
    # (PgBouncer < 1.21, or max_prepared_statements = 0) set HAMMERWEB_PG_PREPARE=off.
    if os.environ.get("HAMMERWEB_PG_PREPARE", "on") != "off":
        _db.setdefault("OPTIONS", {}).setdefault("prepare_threshold", 5)
    _db["TEST"] = {"NAME": f"test_{_db['NAME']}{_suffix}"}

if os.environ.get("HAMMERWEB_USE_TEST_DB") == "1":
    # A worker started by the tests (in a subprocess) works on the test database.
    _db["NAME"] = _db["TEST"]["NAME"]

DATABASES = {"default": _db}

# django.tasks: `@task` functions become jobs that `manage.py runworker` runs.
TASKS = {
    "default": {
        "BACKEND": "queues.tasks_backend.HammerwebBackend",
        "QUEUES": [],  # any queue name
        "OPTIONS": {"DATABASE": "default", "MAX_ATTEMPTS": 1},
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LOGIN_URL = "admin:login"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "queues": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "workers": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# PortableIndex (queues.models) keeps a partial index's columns on MySQL/MariaDB, which have
# no partial indexes, so Django's warning that the condition is dropped is expected there.
SILENCED_SYSTEM_CHECKS = ["models.W037"]
