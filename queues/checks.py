"""System checks for what a project that installs Hammerweb can get wrong, each with what to
add. They run with `manage.py check` and before `runserver`, `migrate` and `runworker`, and
read settings only (no database connection). The django.tasks backend checks its own
configuration (`HammerwebBackend.check`), and `workers` checks that its `runworker` wins.
See docs/design/vocabulary.md."""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.db import connections, router

from queues import conf, schedules
from queues.store.sql.session import MYSQL_ISOLATION

HTMX_MIDDLEWARE = "django_htmx.middleware.HtmxMiddleware"
DOCS = "docs/howto/deploy.md in Hammerweb's repository"


@checks.register()
def check_settings(app_configs=None, **kwargs):
    return [
        checks.Error(problem, hint=f"The keys and their defaults: {DOCS}.", id="queues.E001")
        for problem in conf.problems()
    ]


@checks.register()
def check_schedules(app_configs=None, **kwargs):
    """Every declared schedule (HAMMERWEB["SCHEDULES"]), so that a bad entry (a cron that
    does not parse, an unknown time zone, a bad queue name) is an error that names it, not a
    worker that fails to sync."""
    return [
        checks.Error(
            problem,
            hint="See 'Schedules' in Hammerweb's manual (docs/howto/schedules.md).",
            obj="settings.HAMMERWEB",
            id="queues.E030",
        )
        for problem in schedules.problems()
    ]


@checks.register()
def check_dashboard(app_configs=None, **kwargs):
    """What the dashboard's pages need around them."""
    errors = []
    if HTMX_MIDDLEWARE not in settings.MIDDLEWARE:
        errors.append(
            checks.Error(
                "The Hammerweb dashboard needs django-htmx's middleware (request.htmx).",
                hint=f'Add "{HTMX_MIDDLEWARE}" to MIDDLEWARE.',
                id="queues.E002",
            )
        )
    if not apps.is_installed("django_htmx"):
        errors.append(
            checks.Error(
                "The Hammerweb dashboard needs the django_htmx app (its template tags serve htmx).",
                hint='Add "django_htmx" to INSTALLED_APPS.',
                id="queues.E003",
            )
        )
    if not apps.is_installed("django.contrib.admin"):
        errors.append(
            checks.Error(
                "The Hammerweb dashboard logs staff in through the admin's login page.",
                hint='Add "django.contrib.admin" to INSTALLED_APPS and include admin.site.urls.',
                id="queues.E004",
            )
        )
    asgi = getattr(settings, "ASGI_APPLICATION", None)
    if asgi and conf.get("WEBSOCKET") and "default" not in getattr(settings, "CHANNEL_LAYERS", {}):
        errors.append(
            checks.Warning(
                "The dashboard's live push needs a channel layer; without one its pages poll.",
                hint='Add CHANNEL_LAYERS = {"default": {"BACKEND": '
                '"channels.layers.InMemoryChannelLayer"}} (one per web process is enough), '
                'or set HAMMERWEB = {"WEBSOCKET": False}.',
                id="queues.W005",
            )
        )
    return errors


@checks.register()
def check_databases(app_configs=None, **kwargs):
    return database_errors(connections)


def database_errors(handler) -> list:
    """The databases of `handler` that can hold Hammerweb's tables, for what the engine
    cannot set up itself (see queues/store/sql/session.py)."""
    from queues.models import Job

    errors = []
    for alias in handler:
        if not router.allow_migrate_model(alias, Job):
            continue
        connection = handler[alias]
        if connection.vendor == "sqlite" and _in_memory(connection):
            errors.append(
                checks.Error(
                    f"DATABASES[{alias!r}] is a SQLite database in memory: each connection "
                    "(every worker thread and process) would see a database of its own.",
                    hint='Give it a file: "NAME": BASE_DIR / "db.sqlite3".',
                    id="queues.E010",
                )
            )
        if connection.vendor == "mysql":
            options = connection.settings_dict.get("OPTIONS", {})
            level = options.get("isolation_level", MYSQL_ISOLATION)
            if (level or "").lower() != MYSQL_ISOLATION:
                errors.append(
                    checks.Error(
                        f"DATABASES[{alias!r}] runs at isolation level {level!r}; Hammerweb's "
                        f"claims need {MYSQL_ISOLATION!r} on MySQL/MariaDB (under REPEATABLE "
                        "READ their gap locks block enqueues and deadlock).",
                        hint=f'Remove OPTIONS["isolation_level"] (Django\'s default is '
                        f'"{MYSQL_ISOLATION}") or set it to "{MYSQL_ISOLATION}". If your own '
                        "code needs another level, give Hammerweb an alias of its own for the "
                        "same database (JobQueue(using=...), runworker --database, the TASKS "
                        'backend\'s OPTIONS["DATABASE"]).',
                        id="queues.E011",
                    )
                )
    return errors


def _in_memory(connection) -> bool:
    name = str(connection.settings_dict.get("NAME") or "")
    # Django's test runner puts its own in-memory test database (one per process, shared by
    # its threads) in place before it runs the checks: a project's tests may use that one.
    if name.startswith("file:memorydb_"):
        return False
    return connection.creation.is_in_memory_db(name)


#: The OPTIONS of the django.tasks backend, and what each must be.
TASKS_OPTIONS = {"DATABASE": "a DATABASES alias", "MAX_ATTEMPTS": "a whole number, at least 1"}


def check_tasks_backend(backend) -> list:
    """A `TASKS` entry with Hammerweb's backend whose tasks no worker could run."""
    from queues.exceptions import QueueError
    from queues.validation import validate_queue_name

    where = f"TASKS[{backend.alias!r}]"
    errors = []
    if not apps.is_installed("workers"):
        errors.append(
            checks.Error(
                f"{where} uses Hammerweb's backend, but no worker can run its tasks: the "
                "workers app (manage.py runworker) is not installed.",
                hint='Add "workers" to INSTALLED_APPS.',
                id="queues.E020",
            )
        )
    for name in sorted(backend.queues):
        try:
            validate_queue_name(name)
        except QueueError as exc:
            errors.append(
                checks.Error(
                    f'{where}["QUEUES"] lists {name!r}, which no worker can run: {exc}.',
                    id="queues.E021",
                )
            )
    options = backend.options
    unknown = sorted(set(options) - set(TASKS_OPTIONS))
    if unknown:
        errors.append(
            checks.Error(
                f'{where}["OPTIONS"] has unknown keys {unknown}.',
                hint=f"Known: {', '.join(sorted(TASKS_OPTIONS))}.",
                id="queues.E022",
            )
        )
    if backend.using not in connections:
        errors.append(
            checks.Error(
                f'{where}["OPTIONS"]["DATABASE"] is {backend.using!r}, which is not in '
                "DATABASES: its tasks would be written nowhere.",
                id="queues.E023",
            )
        )
    attempts = backend.max_attempts
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        errors.append(
            checks.Error(
                f'{where}["OPTIONS"]["MAX_ATTEMPTS"] must be {TASKS_OPTIONS["MAX_ATTEMPTS"]}, '
                f"not {attempts!r}.",
                id="queues.E024",
            )
        )
    return errors
