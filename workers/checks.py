"""System checks of the workers app: `manage.py runworker` must run Hammerweb's command.
Django runs the command of the first app in INSTALLED_APPS that has one, so an app above
`workers` with its own `runworker` (channels has one) is an error."""

from __future__ import annotations

import os

from django.apps import apps
from django.core import checks
from django.core.management import find_commands


@checks.register()
def check_runworker_wins(app_configs=None, **kwargs):
    """Django runs the `runworker` of the first app in INSTALLED_APPS that has one (channels
    ships one for its own workers), so an app listed above `workers` with its own
    `runworker` would take over `manage.py runworker`."""
    for config in apps.get_app_configs():
        if config.name == "workers":
            return []
        if "runworker" in find_commands(os.path.join(config.path, "management")):
            return [
                checks.Error(
                    f"{config.name!r} is listed above 'workers' in INSTALLED_APPS and has a "
                    f"runworker command too, so `manage.py runworker` would run {config.name}'s, "
                    "not Hammerweb's.",
                    hint=f"Move 'workers' above {config.name!r} in INSTALLED_APPS.",
                    id="workers.E001",
                )
            ]
    return []
