"""System checks of the `HAMMERWEB` setting: every declared schedule is checked at start
(`manage.py check`, `runworker`, `runserver`), so that a bad entry (a cron that does not
parse, an unknown time zone, a bad queue name) is an error naming it, not a worker that
fails to sync."""

from __future__ import annotations

from django.core import checks

from . import schedules


@checks.register("hammerweb")
def check_schedules(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            problem,
            hint="See 'Schedules declared in settings' in the README.",
            obj="settings.HAMMERWEB",
            id="hammerweb.E001",
        )
        for problem in schedules.problems()
    ]
