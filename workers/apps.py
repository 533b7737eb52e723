"""The workers app's configuration: it registers the app's system checks (checks.py) once
Django is ready. `workers` must come before any other app with a `runworker` command in
INSTALLED_APPS."""

from __future__ import annotations

from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Job workers"

    def ready(self) -> None:
        from workers import checks  # noqa: F401 (registers the system checks)
