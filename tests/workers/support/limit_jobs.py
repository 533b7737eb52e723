"""The handler of the limit tests (`runworker ... --include tests.workers.support.limit_jobs`): a
user's handler that records its start and end with the ORM (a `LimitedRun` row) and sleeps
a little between them, so a test can tell how many ran at once across processes. The model
belongs to no installed app (no migration); the test creates its table."""

from __future__ import annotations

import os
import time

from django.db import connection, models

from workers.api import job_handler

LIMITED_QUEUE = "sub_limited"


class LimitedRun(models.Model):
    job_id = models.UUIDField(unique=True)
    pid = models.PositiveIntegerField()
    #: Wall-clock seconds (time.time()): the processes share the machine's clock.
    started = models.FloatField()
    ended = models.FloatField(null=True)

    class Meta:
        app_label = "hammerweb_tests"
        db_table = "hammerweb_test_limited_run"
        managed = False

    def __str__(self) -> str:
        return f"run of job {self.job_id} in {self.pid}"


@job_handler(LIMITED_QUEUE)
def limited(job):
    run = LimitedRun.objects.create(job_id=job.id, pid=os.getpid(), started=time.time())
    time.sleep(float(job.payload.get("seconds", 0)))
    LimitedRun.objects.filter(pk=run.pk).update(ended=time.time())
    return {"pid": os.getpid()}


def most_at_once(runs: list[LimitedRun]) -> int:
    """The most runs between their start and their end at one moment (an end before a
    start at the same instant: they did not overlap)."""
    events = sorted([(r.started, 1) for r in runs] + [(r.ended, -1) for r in runs])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def create_table() -> None:
    drop_table()
    with connection.schema_editor() as editor:
        editor.create_model(LimitedRun)


def drop_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {LimitedRun._meta.db_table}")
