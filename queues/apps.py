from __future__ import annotations

from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "queues"
    verbose_name = "Job queues"
    default_auto_field = "django.db.models.BigAutoField"
