"""`scripts/bench-peers`: PgQueuer, Procrastinate and Chancy on the same PostgreSQL and the same
handler shapes as Hammerweb's benchqueue, each from its own scratch venv and run as its users
run it (its own worker CLI, its recommended settings). See docs/benchmarks/peers.md.

Stdlib only: this side builds the venvs, runs one driver process per measurement inside the
peer's venv (peers/driver.py) and reports the medians of interleaved rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from . import report, venvs
from .registry import PEERS, SHAPES, UsageError, parse_names, settings_for

DEFAULT_URL = "postgres://root@127.0.0.1:5432/hammerweb_peer"
SCRIPTS = Path(__file__).resolve().parent.parent


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return number


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="scripts/bench-peers",
        description="Run PgQueuer, Procrastinate and Chancy on the same PostgreSQL and handler "
        "shapes, each in its own venv under var/peers/, and report jobs/s and idle pickup "
        "latency (docs/benchmarks/peers.md).",
    )
    parse.add_argument("--jobs", type=positive, default=5000, help="jobs per throughput run")
    parse.add_argument(
        "--peers", default=",".join(PEERS), help=f"comma-separated, of {', '.join(PEERS)}"
    )
    parse.add_argument(
        "--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}"
    )
    parse.add_argument(
        "--repeat", type=positive, default=1, help="rounds, interleaved; report each median"
    )
    parse.add_argument(
        "--samples", type=positive, default=100, help="jobs enqueued one by one for the pickup"
    )
    parse.add_argument(
        "--database-url",
        default=DEFAULT_URL,
        help="PostgreSQL server and database-name prefix: each peer gets <name>_<peer>, "
        "dropped and created afresh (default %(default)s)",
    )
    parse.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PEER.KEY=VALUE",
        help="override one of a peer's settings, e.g. pgqueuer.batch_size=10 (repeatable)",
    )
    parse.add_argument(
        "--planner-stats",
        choices=["backlog", "empty"],
        default="backlog",
        help="ANALYZE the peer's tables after the bulk enqueue (backlog, untimed, as "
        "autovacuum would on a live server) or only while empty, before it (default %(default)s)",
    )
    parse.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parse


def peer_url(url: str, peer: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise UsageError(f"--database-url {url!r}: a postgres:// URL")
    base = parts.path.lstrip("/") or "hammerweb_peer"
    return urlunsplit(parts._replace(path=f"/{base}_{peer}"))


def run_driver(python: Path, command: str, peer: str, dsn: str, settings: dict, log: Path,
               *extra: str) -> dict:
    argv = [str(python), "-m", "peers.driver", command, "--peer", peer, "--dsn", dsn,
            "--settings", json.dumps(settings), "--log", str(log), *extra]
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
    done = subprocess.run(argv, env=env, cwd=SCRIPTS, capture_output=True, text=True)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("PEERBENCH "):
            return json.loads(line.removeprefix("PEERBENCH "))
    tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
    return {"error": f"driver exited {done.returncode}: " + " | ".join(tail)}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        peers = parse_names(args.peers, list(PEERS), "peer")
        shapes = parse_names(args.shapes, SHAPES, "shape")
        settings = settings_for(peers, args.set)
        urls = {peer: peer_url(args.database_url, peer) for peer in peers}
    except UsageError as error:
        print(f"bench-peers: {error}", file=sys.stderr)
        return 2

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    logs = venvs.VAR / "logs" / time.strftime("%Y%m%d-%H%M%S")
    logs.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    pythons, setups = {}, {}
    for peer in peers:
        pythons[peer] = venvs.ensure(PEERS[peer], say)
        say(f"setting up {urls[peer].rsplit('/', 1)[-1]} ({peer}'s own schema command) ...")
        setups[peer] = run_driver(
            pythons[peer], "setup", peer, urls[peer], settings[peer], logs / f"{peer}-setup.log"
        )
        if "error" in setups[peer]:
            say(f"{peer}: setup failed: {setups[peer]['error']}")
    ready = [peer for peer in peers if "error" not in setups[peer]]

    runs = []
    steps = [(round_, shape, peer) for round_ in range(args.repeat) for shape in shapes
             for peer in ready]
    for number, (round_, shape, peer) in enumerate(steps, 1):
        say(f"[{number}/{len(steps)}] {peer} {shape} (round {round_ + 1}) ...")
        log = logs / f"{peer}-{shape}-{round_ + 1}.log"
        if shape == "pickup":
            extra = ("--samples", str(args.samples), "--seed", str(round_ + 11))
            result = run_driver(pythons[peer], "pickup", peer, urls[peer], settings[peer], log,
                                *extra)
        else:
            extra = ("--shape", shape, "--jobs", str(args.jobs),
                     "--planner-stats", args.planner_stats)
            result = run_driver(pythons[peer], "throughput", peer, urls[peer], settings[peer],
                                log, *extra)
        run = {"peer": peer, "version": PEERS[peer].version, "shape": shape,
               "settings": settings[peer]}
        if "error" in result:
            say(f"  {peer} {shape}: {result['error']}")
            run["error"] = result["error"]
        else:
            run["figures"] = result
        runs.append(run)

    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "server_version": next((s["server_version"] for s in setups.values()
                                if "server_version" in s), None),
        "jobs": args.jobs,
        "samples": args.samples,
        "repeat": args.repeat,
        "planner_stats": args.planner_stats,
        "load_before": [round(value, 2) for value in load_before],
        "load_after": [round(value, 2) for value in os.getloadavg()],
        "cpus": os.cpu_count(),
        "packages": {peer: venvs.packages(PEERS[peer]) for peer in peers},
        "setup_errors": {peer: s["error"] for peer, s in setups.items() if "error" in s},
        "logs": str(logs),
    }
    results = report.medians(runs)
    print(report.as_json(meta, results) if args.json else report.as_table(meta, results))
    failed = meta["setup_errors"] or any(result["errors"] for result in results)
    return 1 if failed else 0
