"""Chancy 0.26: the app a user writes (a Chancy object, one async job, one declared queue) and
how the benchmark installs, feeds, runs and checks it. Runs only inside Chancy's venv."""

from __future__ import annotations

import os
from contextlib import asynccontextmanager

from chancy import Chancy, Queue, job

from peers import shapes

QUEUE = "bench"
EXECUTORS = {
    "async": Chancy.Executor.Async,
    "threaded": Chancy.Executor.Threaded,
    "process": Chancy.Executor.Process,
}
_settings = shapes.settings()


# The user's side: `chancy --app peers.chancy_app.chancy worker start`, default plugins.
chancy = Chancy(
    os.environ.get(shapes.DSN_ENV, ""),
    max_connection_pool_size=int(_settings.get("pool_size", 10)),
)


async def write_row(n: int) -> None:
    # Through the app's own pool, as Chancy's docs do for transactional pushes.
    async with chancy.pool.connection() as connection:
        await connection.execute(f"INSERT INTO {shapes.ROWS_TABLE} (n) VALUES (%s)", [n])


@job(queue=QUEUE)
async def bench(*, n: int) -> object:
    return await shapes.handle(n, write_row)


# The benchmark's side.
APP = "peers.chancy_app.chancy"


def install_commands(bin_dir: str, settings: dict) -> list[list[str]]:
    return [[f"{bin_dir}/chancy", "--app", APP, "misc", "migrate"]]


def install_env(dsn: str) -> dict[str, str]:
    return {shapes.DSN_ENV: dsn}


def worker_command(bin_dir: str, settings: dict) -> list[str]:
    return [f"{bin_dir}/chancy", "--app", APP, "worker", "start"]


RESET = ["TRUNCATE chancy_jobs, chancy_workers, chancy_leader CASCADE"]
UNFINISHED = (
    "SELECT EXISTS (SELECT 1 FROM chancy_jobs WHERE state IN ('pending', 'running', 'retrying'))"
)
# Runs from the attempts column: a job run twice has attempts 2.
VERIFY = """
    SELECT
        count(*) FILTER (WHERE state = 'succeeded'),
        count(DISTINCT id) FILTER (WHERE state = 'succeeded'),
        count(*) FILTER (WHERE state = 'failed'),
        coalesce(sum(attempts), 0)
    FROM chancy_jobs
"""


async def declare(settings: dict) -> None:
    queue = Queue(
        QUEUE,
        executor=EXECUTORS[settings["executor"]],
        concurrency=settings["concurrency"],
        polling_interval=settings["polling_interval"],
        eager_polling=settings["eager_polling"],
    )
    async with chancy:
        await chancy.declare(queue, upsert=True)


@asynccontextmanager
async def producer(settings: dict):
    async with chancy:
        yield Producer()


class Producer:
    async def bulk(self, count: int) -> None:
        async for _ in chancy.push_many([bench.job.with_kwargs(n=n) for n in range(count)]):
            pass

    async def one(self, n: int) -> None:
        await chancy.push(bench.job.with_kwargs(n=n))
