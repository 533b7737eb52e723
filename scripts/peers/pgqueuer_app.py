"""PgQueuer 1.6: the app a user writes (a `pgq run` factory with one entrypoint) and how the
benchmark installs, feeds, runs and checks it. Runs only inside PgQueuer's venv."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Context, Job
from pgqueuer.queries import Queries

from peers import shapes

ENTRYPOINT = "bench"


# The user's side: `pgq run peers.pgqueuer_app:main --batch-size 100`, the factory an async
# context manager as in PgQueuer's quickstart.
@asynccontextmanager
async def main():
    settings = shapes.settings()
    if settings.get("driver") == "psycopg":
        import psycopg

        connection = await psycopg.AsyncConnection.connect(shapes.dsn(), autocommit=True)
        pgq = PgQueuer.from_psycopg_connection(connection)
    else:
        pgq = PgQueuer.from_asyncpg_connection(await asyncpg.connect(shapes.dsn()))
    if shapes.shape() == "sql":
        # The app's own pool, as the tuning guide says: the QueueManager's connection is its
        # LISTEN channel and its queries, not the handlers'.
        size = int(settings.get("app_pool", 10))
        pgq.resources["pool"] = await asyncpg.create_pool(
            shapes.dsn(), min_size=size, max_size=size
        )

    @pgq.entrypoint(ENTRYPOINT, accepts_context=True)
    async def bench(job: Job, context: Context) -> object:
        async def write_row(n: int) -> None:
            async with context.resources["pool"].acquire() as connection:
                await connection.execute(f"INSERT INTO {shapes.ROWS_TABLE} (n) VALUES ($1)", n)

        return await shapes.handle(json.loads(job.payload)["n"], write_row)

    try:
        yield pgq
    finally:
        if "pool" in pgq.resources:
            await pgq.resources["pool"].close()


# The benchmark's side.
def install_commands(bin_dir: str, settings: dict) -> list[list[str]]:
    commands = [[f"{bin_dir}/pgq", "install", "--durability", settings["durability"]]]
    if settings["autovac"]:
        commands.append([f"{bin_dir}/pgq", "autovac"])
    return commands


def install_env(dsn: str) -> dict[str, str]:
    return {"PGDSN": dsn}


def worker_command(bin_dir: str, settings: dict) -> list[str]:
    command = [
        f"{bin_dir}/pgq",
        "run",
        "peers.pgqueuer_app:main",
        "--batch-size",
        str(settings["batch_size"]),
        "--dequeue-timeout",
        str(settings["dequeue_timeout"]),
    ]
    if settings["max_concurrent_tasks"]:
        command += ["--max-concurrent-tasks", str(settings["max_concurrent_tasks"])]
    return command


RESET = ["TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics"]
# A finished job leaves the queue table (deleted, with its log row, in one statement).
UNFINISHED = "SELECT EXISTS (SELECT 1 FROM pgqueuer)"
VERIFY = """
    SELECT
        count(*) FILTER (WHERE status = 'successful'),
        count(DISTINCT job_id) FILTER (WHERE status = 'successful'),
        count(*) FILTER (WHERE status IN ('exception', 'failed', 'canceled')),
        count(*) FILTER (WHERE status = 'picked')
    FROM pgqueuer_log
"""


async def declare(settings: dict) -> None:
    """PgQueuer has no queue to declare: entrypoints are registered by the worker."""


@asynccontextmanager
async def producer(settings: dict):
    connection = await asyncpg.connect(shapes.dsn())
    queries = Queries(AsyncpgDriver(connection))
    try:
        yield Producer(queries)
    finally:
        await connection.close()


class Producer:
    def __init__(self, queries: Queries):
        self.queries = queries

    async def bulk(self, count: int) -> None:
        payloads = [json.dumps({"n": n}).encode() for n in range(count)]
        await self.queries.enqueue([ENTRYPOINT] * count, payloads, [0] * count)

    async def one(self, n: int) -> None:
        await self.queries.enqueue(ENTRYPOINT, json.dumps({"n": n}).encode(), 0)
