"""One measurement of one peer, run inside the peer's venv by `scripts/bench-peers`:
`python -m peers.driver {setup,throughput,pickup} --peer NAME --dsn URL ...`.

Every timestamp is this process's time.monotonic() (the handlers' pickup probes read the same
CLOCK_MONOTONIC, which Linux shares between the processes of one host). The worker is the
peer's own CLI in a child process; this process enqueues, watches the peer's own tables for
the end (an EXISTS query every 20 ms on its own connection) and then checks that every job
ran exactly once. The result is one line, `PEERBENCH {json}`, on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from peers import shapes
from peers.report import percentile

SCRIPTS = Path(__file__).resolve().parent.parent


def _project_module(name: str, relative: str):
    """A stdlib-only module of the project, loaded by path: this process runs in a peer's
    venv, which cannot import the project's packages."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS.parent / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


POLL = 0.02
STOP_TIMEOUT = 30.0
MARK = "PEERBENCH "
cpu = _project_module("hammerweb_cpu", "hammerweb/measure/benchmark/cpu.py")


class BenchFailure(RuntimeError):
    """The peer did not run every job exactly once, or its worker died: reported, not timed."""


def app_module(peer: str):
    return importlib.import_module(f"peers.{peer}_app")


def worker_env(dsn: str, shape: str, settings: dict, probe: str = "") -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(SCRIPTS), env.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1",
            shapes.DSN_ENV: dsn,
            shapes.SHAPE_ENV: shape,
            shapes.SETTINGS_ENV: json.dumps(settings),
        }
    )
    if probe:
        env[shapes.SOCKET_ENV] = probe
    return env


def bin_dir() -> str:
    return str(Path(sys.executable).parent)


def setup(peer: str, dsn: str, settings: dict, log: Path) -> dict:
    """A fresh database for the peer, its schema installed by its own command, the handlers'
    table, and its queue declared where it has one."""
    params = conninfo_to_dict(dsn)
    name = params["dbname"]
    with psycopg.connect(make_conninfo(dsn, dbname="postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
        server = admin.execute("SHOW server_version").fetchone()[0]
    module = app_module(peer)
    env = {**worker_env(dsn, "noop", settings), **module.install_env(dsn)}
    with log.open("a") as out:
        for command in module.install_commands(bin_dir(), settings):
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT)
            if done.returncode:
                raise BenchFailure(f"{' '.join(command)} exited {done.returncode} (see {log})")
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(shapes.CREATE_ROWS)
    asyncio.run(module.declare(settings))
    return {"server_version": server, "database": name}


def reset(module, dsn: str) -> None:
    """Empty tables for each measurement, vacuumed and analyzed: this server runs with
    autovacuum off, and Hammerweb's benchmark vacuums its database before it runs too."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        for statement in module.RESET:
            connection.execute(statement)
        connection.execute(f"TRUNCATE {shapes.ROWS_TABLE}")
        connection.execute("VACUUM ANALYZE")


def start_worker(module, dsn: str, shape: str, settings: dict, log: Path, probe: str = ""):
    command = module.worker_command(bin_dir(), settings)
    out = log.open("a")
    out.write(f"$ {' '.join(command)}\n")
    out.flush()
    process = subprocess.Popen(
        command,
        env=worker_env(dsn, shape, settings, probe),
        cwd=SCRIPTS,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out.close()
    return process


def stop_worker(process) -> float:
    """SIGTERM (each peer's graceful stop), then SIGKILL after STOP_TIMEOUT; the seconds taken."""
    began = time.monotonic()
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return time.monotonic() - began


def wait_finished(connection, module, process, deadline: float) -> float:
    """Polls until the peer's table holds no unfinished job; the monotonic time it saw that."""
    while True:
        if not connection.execute(module.UNFINISHED).fetchone()[0]:
            return time.monotonic()
        if process.poll() is not None:
            raise BenchFailure(f"the worker exited ({process.returncode}) before the end")
        if time.monotonic() > deadline:
            raise BenchFailure("the worker did not finish its jobs in time")
        time.sleep(POLL)


def verify(connection, module, expected: int, shape: str) -> dict:
    succeeded, distinct, failed, runs = connection.execute(module.VERIFY).fetchone()
    checked = {"succeeded": succeeded, "distinct": distinct, "failed": failed, "runs": runs}
    if shape == "sql":
        rows, numbers = connection.execute(
            f"SELECT count(*), count(DISTINCT n) FROM {shapes.ROWS_TABLE}"
        ).fetchone()
        checked.update(rows=rows, distinct_rows=numbers)
    wrong = {key: value for key, value in checked.items() if value != expected}
    wrong.pop("failed", None)
    if failed or wrong:
        raise BenchFailure(f"expected {expected} jobs run exactly once, found {checked}")
    return checked


def throughput(
    peer: str, dsn: str, settings: dict, shape: str, jobs: int, log: Path, stats: str = "backlog"
) -> dict:
    module = app_module(peer)
    reset(module, dsn)

    async def enqueue() -> tuple[float, float]:
        async with module.producer(settings) as producer:
            began = time.monotonic()
            await producer.bulk(jobs)
            return began, time.monotonic()

    enqueued, enqueue_done = asyncio.run(enqueue())
    with psycopg.connect(dsn, autocommit=True) as connection:
        # Statistics of the backlog, as autovacuum would have them on a live server: analyzed
        # empty, the planner takes the queue for empty and some peers' claims then sort every
        # queued row on each fetch. Not timed: the figures add the enqueue to the worker's run.
        if stats == "backlog":
            connection.execute("ANALYZE")
        backend = connection.execute("SELECT pg_backend_pid()").fetchone()[0]
        worker_before, server_before = cpu.children_cpu(), cpu.postgres_cpu(backend)
        spawned = time.monotonic()
        process = start_worker(module, dsn, shape, settings, log)
        try:
            finished = wait_finished(connection, module, process, spawned + 120 + jobs / 50)
        finally:
            stop_seconds = stop_worker(process)
        # Both until the worker has exited: its shutdown's work is part of its run.
        worker_cpu = cpu.children_cpu() - worker_before
        server_after = cpu.postgres_cpu(backend)
        checked = verify(connection, module, jobs, shape)
    local = cpu.is_local(conninfo_to_dict(dsn).get("host"))
    server_cpu = server_after - server_before if local and server_before is not None else None
    total = (enqueue_done - enqueued) + (finished - spawned)
    return {
        "jobs": jobs,
        "enqueue_seconds": enqueue_done - enqueued,
        "worker_seconds": finished - spawned,
        "total_seconds": total,
        "jobs_per_second": jobs / total,
        "worker_jobs_per_second": jobs / (finished - spawned),
        "stop_seconds": stop_seconds,
        # CPU a job: the worker process (and its children), and the server where it runs on
        # this machine (None elsewhere); the driver's own polling is in the server's share.
        "worker_cpu_us_per_job": round(worker_cpu / jobs * 1e6, 1),
        "server_cpu_us_per_job": None if server_cpu is None else round(server_cpu / jobs * 1e6, 1),
        "verified": checked,
    }


def pickup(peer: str, dsn: str, settings: dict, samples: int, log: Path, seed: int) -> dict:
    module = app_module(peer)
    reset(module, dsn)
    probe = str(log.with_suffix(".sock"))
    Path(probe).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(probe)
    listener.setblocking(False)
    process = start_worker(module, dsn, "pickup", settings, log, probe)
    gaps = random.Random(seed)

    async def started(n: int, timeout: float) -> float:
        """Job n's start, from its handler's probe; fails at once if the worker died."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BenchFailure(f"the worker exited ({process.returncode})")
            try:
                data = await asyncio.wait_for(loop.sock_recv(listener, 256), 0.5)
            except TimeoutError:
                continue
            number, at = data.decode().split()
            if int(number) == n:
                return float(at)
        raise BenchFailure(f"job {n}, enqueued to the idle worker, did not start in {timeout} s")

    async def run() -> tuple[list[float], list[float]]:
        from_call, from_commit = [], []
        async with module.producer(settings) as producer:
            # One job first: the worker is up, connected and idle once it has run it.
            await producer.one(-1)
            await started(-1, 120.0)
            await asyncio.sleep(0.5)
            for n in range(samples):
                # A random gap, so that a polling worker is caught at every phase of its poll.
                await asyncio.sleep(gaps.uniform(0.05, 0.15))
                called = time.monotonic()
                await producer.one(n)
                committed = time.monotonic()
                at = await started(n, 60.0)
                from_call.append(at - called)
                from_commit.append(at - committed)
        return from_call, from_commit

    try:
        from_call, from_commit = asyncio.run(run())
        with psycopg.connect(dsn, autocommit=True) as connection:
            wait_finished(connection, module, process, time.monotonic() + 60)
            stop_seconds = stop_worker(process)
            checked = verify(connection, module, samples + 1, "pickup")
    finally:
        stop_worker(process)
        listener.close()
        Path(probe).unlink(missing_ok=True)
    ms = [value * 1000 for value in from_call]
    return {
        "samples": samples,
        "p50_ms": percentile(ms, 0.50),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "p50_from_commit_ms": percentile([value * 1000 for value in from_commit], 0.50),
        "stop_seconds": stop_seconds,
        "verified": checked,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="peers.driver")
    parser.add_argument("command", choices=["setup", "throughput", "pickup"])
    parser.add_argument("--peer", required=True)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--settings", default="{}")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--shape", default="noop")
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--planner-stats", choices=["backlog", "empty"], default="backlog")
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)
    # The peers' apps read the settings at import; the workers get them in their environment.
    os.environ[shapes.SETTINGS_ENV] = args.settings
    os.environ[shapes.DSN_ENV] = args.dsn
    try:
        if args.command == "setup":
            result = setup(args.peer, args.dsn, settings, args.log)
        elif args.command == "throughput":
            result = throughput(
                args.peer, args.dsn, settings, args.shape, args.jobs, args.log, args.planner_stats
            )
        else:
            result = pickup(args.peer, args.dsn, settings, args.samples, args.log, args.seed)
    except BenchFailure as failure:
        result = {"error": str(failure)}
    print(MARK + json.dumps(result), flush=True)
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
