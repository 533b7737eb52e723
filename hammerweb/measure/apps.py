from __future__ import annotations

from django.apps import AppConfig


class MeasureConfig(AppConfig):
    """The measurement commands (docs/benchmarks/): `benchqueue`, `filljobs`,
    `measurepages` and `measureoverview`. Installed with HAMMERWEB_MEASURE=1 and by the
    tests' settings; never part of a deployment, since they fill and time the database."""

    name = "hammerweb.measure"
    label = "measure"
    verbose_name = "Hammerweb measurements"

    def ready(self) -> None:
        from hammerweb.measure.benchmark import statements

        statements.install()  # only in benchqueue's runworker children (their environment)
