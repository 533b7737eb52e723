"""The handlers of `benchqueue`'s runworker figures, one queue each: what users run.
`runworker ... --include hammerweb.measure.benchmark.shapes` registers them."""

from __future__ import annotations

from datetime import timedelta

from django.tasks import task

from hammerweb.measure.models import BenchNote
from workers.api import job_handler

NONE, DICT, TASK, ORM = "bench_rw_none", "bench_rw_dict", "bench_rw_task", "bench_rw_orm"
#: The jobs of `enqueue_batch` (one batch, tallied as its jobs end), with a None handler.
BATCH = "bench_rw_batch"
#: Jobs with a timeout (`TIMEOUT`), with the dict handler: each runs outside its slot.
TIMED = "bench_rw_timed"
TIMEOUT = timedelta(minutes=5)
#: The dict handler's jobs spread over four queues that one `runworker` serves.
FOUR = "bench_rw_four"
#: Every shape, in the order of the report: (label, queue).
SHAPES = [
    ("returns None", NONE),
    ('returns {"ok": True, "n": i}', DICT),
    ('returns {"ok": True, "n": i}, a 5-minute timeout', TIMED),
    ("@task returning a + b", TASK),
    ("writes one row with the ORM", ORM),
    ("returns None, one enqueue_batch", BATCH),
    ('returns {"ok": True, "n": i}, jobs on 4 queues', FOUR),
]


def queues_of(shape: str) -> list[str]:
    """The queues of a shape's jobs, all served by its `runworker`."""
    return [f"{FOUR}_{i}" for i in range(4)] if shape == FOUR else [shape]


@job_handler(NONE)
@job_handler(BATCH)
def returns_none(job):
    return None


@job_handler(DICT)
@job_handler(TIMED)
def returns_dict(job):
    return {"ok": True, "n": job.payload["i"]}


for _queue in queues_of(FOUR):
    job_handler(_queue)(returns_dict)


@task(queue_name=TASK)
def add(a, b):
    return a + b


@job_handler(ORM)
def writes_a_row(job):
    note = BenchNote.objects.create(job_id=job.id, n=job.payload["i"])
    return {"note": note.pk}
