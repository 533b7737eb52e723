from __future__ import annotations

from django.db import models


class BenchNote(models.Model):
    """The row the ORM-writing handler of `benchqueue`'s runworker figures inserts: what a
    user's handler that records something in its own table costs."""

    job_id = models.UUIDField()
    n = models.IntegerField()

    class Meta:
        app_label = "measure"

    def __str__(self) -> str:
        return f"note {self.n} of job {self.job_id}"
