"""Settings for the Hammerweb project: the dashboard, the demo and the benchmarks around the
`queues` and `workers` apps. Everything that differs between machines comes from the
environment (docs/howto/deploy.md has a production set-up that `check --deploy` passes):

- `DATABASE_URL`: PostgreSQL, MySQL/MariaDB or SQLite; without it, a SQLite file in `var/`.
- `DJANGO_SECRET_KEY`: required wherever something is signed (logins, the dashboard); there
  is no built-in one (`make demo` and the tests set their own).
- `DJANGO_DEBUG=1`: debug mode, off unless asked for (`make demo` asks).
- `DJANGO_ALLOWED_HOSTS`: comma-separated, default the loopback names.
- `DJANGO_HTTPS=1`: served behind TLS (a load balancer that sets X-Forwarded-Proto): secure
  cookies, HSTS (`DJANGO_HSTS_SECONDS`, default a year) and a redirect of plain HTTP.
- `HAMMERWEB_PG_PREPARE=off` / `on`: `HAMMERWEB["PG_PREPARE"] = False` / `True` (unset: the
  engine prepares its statements unless through a transaction-mode pooler).
- `HAMMERWEB_PG_TRANSACTION_POOLING=1`: PostgreSQL through a transaction-mode pooler
  (`HAMMERWEB["PG_TRANSACTION_POOLING"] = True`, and no server-side cursors); `=0`: not;
  unset: detected.
- `HAMMERWEB_METRICS_TOKEN`: the bearer token of the Prometheus metrics (`/metrics/` and
  `runworker --metrics-port`); unset, `/metrics/` is staff-only and the port open.
- `HAMMERWEB_DEMO=1` installs the `demo` app (sample handlers, `manage.py demo`);
  `HAMMERWEB_MEASURE=1` the measurement commands (`hammerweb.measure`).

The tests run on `tests/settings.py`, which starts from these.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)


def _flag(name: str) -> bool:
    return os.environ.get(name, "") == "1"


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
DEBUG = _flag("DJANGO_DEBUG")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")

# Apps installed only where asked for: the demo's handlers (demo/jobs.py) would register in
# every worker, and the measurement commands fill and time the database.
_optional_apps = [
    *(["demo"] if _flag("HAMMERWEB_DEMO") else []),
    *(["hammerweb.measure"] if _flag("HAMMERWEB_MEASURE") else []),
]

#: daphne's app only replaces `runserver` with its ASGI one; a worker serves no page, and
#: importing it (twisted) was a third of `runworker`'s start-up (profiled), paid by every
#: worker process.
_worker = sys.argv[1:2] == ["runworker"]
_web_apps = [] if _worker else ["daphne"]
#: A worker serves no admin page either: the admin without `autodiscover()` (its models and
#: checks as before) spares a worker the import of every app's admin module (profiled: a
#: tenth of runworker's start-up).
_admin = "django.contrib.admin.apps.SimpleAdminConfig" if _worker else "django.contrib.admin"

INSTALLED_APPS = [
    # Above channels (if it is ever added), whose `runworker` would win otherwise.
    "workers",
    "queues",
    *_optional_apps,
    *_web_apps,
    _admin,
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

_url = os.environ.get("DATABASE_URL", "").strip()
if _url:
    _db = dj_database_url.parse(_url, conn_max_age=60, conn_health_checks=True)
else:
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(VAR_DIR / "hammerweb.sqlite3")}

if _db["ENGINE"].endswith("sqlite3"):
    # WAL lets readers (the dashboard) run beside the one writer; the timeout makes writers
    # wait for each other instead of failing at once. (The engine begins its own
    # transactions IMMEDIATE whatever transaction_mode says: queues/store/sql/session.py.)
    _db.setdefault("OPTIONS", {}).update(
        {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL"}
    )
    # Kept open as on the servers: a connection costs the init_command's statements, and with
    # 0 a worker's handler thread opened one for every job (two thirds of a no-op job's time,
    # measured: docs/benchmarks/journal.md). No health checks: a file does not go away.
    _db["CONN_MAX_AGE"] = 60
elif _db["ENGINE"].endswith("mysql"):
    # Django's MySQL backend is READ COMMITTED unless told otherwise, as the engine needs.
    _db.setdefault("OPTIONS", {}).update({"charset": "utf8mb4"})
    _db.setdefault("TEST", {}).update({"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"})

_pooling = {"1": True, "0": False}.get(os.environ.get("HAMMERWEB_PG_TRANSACTION_POOLING", ""))
if _pooling:
    # Django's named cursors (`.iterator()`) outlive a transaction: not through such a pool.
    _db["DISABLE_SERVER_SIDE_CURSORS"] = True

DATABASES = {"default": _db}

HAMMERWEB = {
    "PG_PREPARE": (os.environ["HAMMERWEB_PG_PREPARE"] != "off")
    if os.environ.get("HAMMERWEB_PG_PREPARE")
    else None,
    "PG_TRANSACTION_POOLING": _pooling,
    "METRICS_TOKEN": os.environ.get("HAMMERWEB_METRICS_TOKEN") or None,
}

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

# Behind TLS, terminated by a load balancer that says so in X-Forwarded-Proto (set it
# there; a client-sent one must be overwritten).
if _flag("DJANGO_HTTPS"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "queues": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "workers": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Django logs each task's start and end at INFO. Its default handlers keep those
        # lines only with DEBUG on; otherwise each record is built for nothing (half of
        # what running a `@task` adds to a job: docs/howto/deploy.md).
        "django.tasks": {"level": "INFO" if DEBUG else "WARNING"},
    },
}
