"""Hammerweb itself, measured by the peers' harness in the same run and the same way as the
peers (bulk enqueue, its own worker CLI in a child process, the driver watching its table),
so that the report can give each peer's figures as ratios to Hammerweb's. It runs from the
project's own venv (`make venv`), not a scratch one, on a database of its own migrated by
`manage.py migrate`.

The user's side is the handler below, registered when `runworker --include
peers.hammerweb_app` imports this module; the benchmark's side (install, reset, producer,
checks) runs in the driver, which sets Django up only for the producer.
"""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

from peers import shapes

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "bench"

# The worker child and the schema command read the database from the environment, as a
# deployment does (the driver sets PEERBENCH_DSN before importing this module).
if shapes.DSN_ENV in os.environ:
    os.environ["DATABASE_URL"] = shapes.dsn()
    os.environ.setdefault("DJANGO_DEBUG", "0")


def _register() -> None:
    """The user's handler (sync, as most Django code is), one body for every shape."""
    from django.db import connection

    from workers.api import job_handler

    @job_handler(QUEUE)
    def bench(job):
        n = job.payload["n"]
        current = shapes.shape()
        if current == "pickup":
            shapes.report_start(n)
        elif current == "dict":
            return shapes.result(n)
        elif current == "sql":
            with connection.cursor() as cursor:
                cursor.execute(f"INSERT INTO {shapes.ROWS_TABLE} (n) VALUES (%s)", [n])
        return None


def _in_worker() -> bool:
    """Imported by the benchmark's runworker child (Django set up, the run's environment)."""
    try:
        from django.apps import apps
    except ImportError:
        return False
    return apps.ready and shapes.DSN_ENV in os.environ and shapes.SHAPE_ENV in os.environ


if _in_worker():
    _register()


# The benchmark's side.
def install_commands(bin_dir: str, settings: dict) -> list[list[str]]:
    # Byte-compiled as the peers' packages are by pip: from a checkout under
    # PYTHONDONTWRITEBYTECODE the worker child would compile every module at start-up.
    packages = [str(ROOT / name) for name in ("queues", "workers", "hammerweb")]
    return [
        [f"{bin_dir}/python", str(ROOT / "manage.py"), "migrate", "-v", "0"],
        [f"{bin_dir}/python", "-m", "compileall", "-q", *packages],
    ]


def install_env(dsn: str) -> dict[str, str]:
    return {"DATABASE_URL": dsn, "DJANGO_DEBUG": "0"}


def worker_command(bin_dir: str, settings: dict) -> list[str]:
    command = [f"{bin_dir}/python", str(ROOT / "manage.py"), "runworker", QUEUE]
    command += ["--batch-size", str(settings["batch_size"])]
    command += ["--concurrency", str(settings["concurrency"])]
    command += ["--processes", str(settings["processes"])]
    return [*command, "--include", "peers.hammerweb_app", "--no-schedules"]


RESET = [
    "TRUNCATE queues_job, queues_jobcount, queues_completioncount, queues_workerprocess, "
    "queues_reaperrun, queues_batch, queues_workflow CASCADE"
]
UNFINISHED = "SELECT EXISTS (SELECT 1 FROM queues_job WHERE status IN ('Pending', 'Running'))"
VERIFY = """
    SELECT
        count(*) FILTER (WHERE status = 'Completed'),
        count(DISTINCT id) FILTER (WHERE status = 'Completed'),
        count(*) FILTER (WHERE status IN ('Failed', 'Dead', 'TimedOut')),
        coalesce(sum(attempts), 0)
    FROM queues_job
"""


async def declare(settings: dict) -> None:
    """Nothing to declare: a queue exists once a job names it."""


def _setup_django() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hammerweb.settings")
    # The driver awaits the producer's calls on its one thread, which does nothing else
    # meanwhile: the ORM's sync calls are safe there (a view would call them the same way).
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    import django

    django.setup()


@asynccontextmanager
async def producer(settings: dict):
    _setup_django()
    from django.db import connection

    try:
        yield Producer()
    finally:
        connection.close()


class Producer:
    """Enqueues as a Django view would: `JobQueue.enqueue_many` / `enqueue`, synchronous (the
    driver does nothing else meanwhile)."""

    def __init__(self) -> None:
        from queues.api import Job, JobQueue

        self.job, self.queue = Job, JobQueue()

    async def bulk(self, count: int) -> None:
        self.queue.enqueue_many(self.job(queue_name=QUEUE, payload={"n": n}) for n in range(count))

    async def one(self, n: int) -> None:
        self.queue.enqueue(self.job(queue_name=QUEUE, payload={"n": n}))
