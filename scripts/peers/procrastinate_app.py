"""Procrastinate 3.10: the app a user writes (an App with one async task) and how the benchmark
installs, feeds, runs and checks it. Runs only inside Procrastinate's venv."""

from __future__ import annotations

import os
from contextlib import asynccontextmanager

import procrastinate

from peers import shapes

QUEUE = "bench"
_settings = shapes.settings()
_pool = int(_settings.get("pool_size", 11))


# The user's side: `procrastinate --app=peers.procrastinate_app.app worker --concurrency=10`.
app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(
        conninfo=os.environ.get(shapes.DSN_ENV, ""), min_size=_pool, max_size=_pool
    )
)


@app.task(name="bench", queue=QUEUE, pass_context=True)
async def bench(context: procrastinate.JobContext, n: int) -> object:
    async def write_row(n: int) -> None:
        # Through the app's own connector (its pool), as a Procrastinate task would.
        await context.app.connector.execute_query_async(
            f"INSERT INTO {shapes.ROWS_TABLE} (n) VALUES (%(n)s)", n=n
        )

    return await shapes.handle(n, write_row)


# The benchmark's side.
APP = "peers.procrastinate_app.app"


def install_commands(bin_dir: str, settings: dict) -> list[list[str]]:
    return [[f"{bin_dir}/procrastinate", f"--app={APP}", "schema", "--apply"]]


def install_env(dsn: str) -> dict[str, str]:
    return {shapes.DSN_ENV: dsn}


def worker_command(bin_dir: str, settings: dict) -> list[str]:
    return [
        f"{bin_dir}/procrastinate",
        f"--app={APP}",
        "worker",
        f"--queues={QUEUE}",
        f"--concurrency={settings['concurrency']}",
        f"--fetch-job-polling-interval={settings['fetch_job_polling_interval']}",
        "--listen-notify" if settings["listen_notify"] else "--no-listen-notify",
        f"--delete-jobs={settings['delete_jobs']}",
    ]


RESET = [
    "TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_periodic_defers, "
    "procrastinate_workers CASCADE"
]
UNFINISHED = (
    "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs WHERE status IN ('todo', 'doing'))"
)
# Runs from the events table: a job started twice has two 'started' events.
VERIFY = """
    SELECT
        (SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'),
        (SELECT count(DISTINCT job_id) FROM procrastinate_events WHERE type = 'succeeded'),
        (SELECT count(*) FROM procrastinate_jobs WHERE status IN ('failed', 'aborted')),
        (SELECT count(*) FROM procrastinate_events WHERE type = 'started')
"""


async def declare(settings: dict) -> None:
    """Procrastinate's queues are names on the jobs: nothing to declare."""


@asynccontextmanager
async def producer(settings: dict):
    async with app.open_async():
        yield Producer()


class Producer:
    async def bulk(self, count: int) -> None:
        await bench.batch_defer_async(*({"n": n} for n in range(count)))

    async def one(self, n: int) -> None:
        await bench.defer_async(n=n)
