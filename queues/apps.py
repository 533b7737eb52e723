"""The `queues` app. At start it registers the system checks and connects the counters'
migration signals: on SQLite the attempt counter's trigger is off while migrating, and the
job counts are cleared after a flush. See docs/design/vocabulary.md."""

from __future__ import annotations

from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "queues"
    verbose_name = "Job queues"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate, pre_migrate

        from queues import checks  # noqa: F401 (registers the system checks)
        from queues.store.counters.attempt_counts import back_after_migrating, off_while_migrating
        from queues.store.counters.counts import clear_after_flush

        post_migrate.connect(clear_after_flush, sender=self)
        pre_migrate.connect(off_while_migrating, sender=self)
        post_migrate.connect(back_after_migrating, sender=self)
