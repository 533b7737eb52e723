"""The peers the benchmark runs, their pinned versions and the settings each runs with.

Stdlib only: the orchestrator imports this under any Python 3.12+, and the driver imports it
inside each peer's venv. Every default below is the peer's own recommendation for short jobs,
with the reason (docs/benchmarks/peers.md quotes them); `--set peer.key=value` overrides one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

SHAPES = ("noop", "dict", "sql", "pickup")
SHAPE_LABELS = {
    "noop": "no-op handler",
    "dict": 'returns {"ok": True, "n": i}',
    "sql": "writes one row with plain SQL",
    "pickup": "idle pickup latency",
}


@dataclass(frozen=True)
class Setting:
    default: object
    why: str


@dataclass(frozen=True)
class Peer:
    name: str
    version: str
    # Installed with `pip install -c constraints/<name>.txt`, so that every machine gets the
    # same drivers; the peer itself is pinned here.
    requirements: tuple[str, ...]
    # Where a handler's return value goes: the table says so beside the "dict" shape.
    stores_results: str
    settings: dict[str, Setting] = field(default_factory=dict)
    # Hammerweb itself: it runs from the project's venv (`make venv`), not a scratch one.
    project: bool = False

    def defaults(self) -> dict[str, object]:
        return {key: setting.default for key, setting in self.settings.items()}


#: The contender the peers are compared with (report.py gives each peer's ratio to it).
HAMMERWEB = "hammerweb"

PEERS: dict[str, Peer] = {
    HAMMERWEB: Peer(
        name=HAMMERWEB,
        version="checkout",  # the code of this working tree
        requirements=(),
        stores_results="yes: the job's result column, in the outcome's batched write",
        project=True,
        settings={
            "batch_size": Setting(50, "runworker --batch-size: issue #11's figures are at 50"),
            "concurrency": Setting(10, "runworker --concurrency: issue #11's figures are at 10"),
            "processes": Setting(1, "runworker --processes (issue #11 also measures 2)"),
        },
    ),
    "pgqueuer": Peer(
        name="pgqueuer",
        version="1.6.0",
        requirements=("pgqueuer[asyncpg]==1.6.0", "psycopg[binary]==3.3.9"),
        stores_results="no: PgQueuer stores no return value (docs: when-to-use.md)",
        settings={
            "batch_size": Setting(
                100,
                "jobs per dequeue; performance-tuning.md: raise it above the default 10 for "
                "short jobs (issue #11 compares against batch 100)",
            ),
            "driver": Setting(
                "asyncpg",
                "benchmarks.md: asyncpg about 1.7x psycopg; performance-tuning.md: a direct "
                "asyncpg connection for the QueueManager",
            ),
            "max_concurrent_tasks": Setting(0, "0: unlimited, the default"),
            "dequeue_timeout": Setting(30.0, "seconds before polling without a NOTIFY (default)"),
            "durability": Setting("durable", "the default: logged tables"),
            "autovac": Setting(True, "`pgq autovac` after install, as the tuning checklist says"),
            "app_pool": Setting(10, "asyncpg pool for the sql handler (asyncpg's default size)"),
        },
    ),
    "procrastinate": Peer(
        name="procrastinate",
        version="3.10.0",
        requirements=("procrastinate==3.10.0", "psycopg[binary,pool]==3.3.9"),
        stores_results="no: Procrastinate stores no return value",
        settings={
            "concurrency": Setting(
                10,
                "sub-workers; concurrency.md: async tasks with `worker --concurrency` (the "
                "default 1 runs one job at a time)",
            ),
            "pool_size": Setting(
                11,
                "discussions.md: for short jobs the pool holds as many connections as the "
                "concurrency plus one",
            ),
            "listen_notify": Setting(True, "the default"),
            "fetch_job_polling_interval": Setting(5.0, "seconds, the default"),
            "delete_jobs": Setting("never", "the default: finished jobs stay in the table"),
        },
    ),
    "chancy": Peer(
        name="chancy",
        version="0.26.0",
        requirements=("chancy[cli]==0.26.0", "psycopg[binary,pool]==3.3.9"),
        stores_results="no: Chancy passes the return value to plugins, none stores it",
        settings={
            "executor": Setting(
                "async",
                "AsyncExecutor: executors docs, 'optimized for IO-bound jobs like API calls "
                "and database operations' (the default ProcessExecutor is for CPU-bound jobs)",
            ),
            "concurrency": Setting(100, "jobs per worker and per fetch: AsyncExecutor's default"),
            "polling_interval": Setting(5, "seconds between polls without a NOTIFY (default)"),
            "eager_polling": Setting(
                True,
                "queue.py: poll again as soon as a job completes, 'where jobs are expected to "
                "be continuously available'; off (the default), a worker fetches at most "
                "`concurrency` jobs per polling_interval, 20 jobs/s here",
            ),
            "pool_size": Setting(10, "Chancy's default max_connection_pool_size"),
        },
    ),
}


class UsageError(ValueError):
    """A bad --peers, --shapes or --set value: reported before anything runs."""


def parse_names(text: str, known: tuple[str, ...] | list[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        named = ", ".join(unknown) or repr(text)
        raise UsageError(f"unknown {what} {named}: use {', '.join(known)}")
    return list(dict.fromkeys(names))


def parse_override(text: str) -> tuple[str, str, object]:
    """`peer.key=value`, the value read as JSON when it parses (100, true, "x") and as a
    string otherwise; the key must be one of the peer's settings."""
    target, sep, raw = text.partition("=")
    peer, dot, key = target.partition(".")
    if not sep or not dot:
        raise UsageError(f"--set {text!r}: write peer.key=value")
    if peer not in PEERS:
        raise UsageError(f"--set {text!r}: unknown peer {peer!r}")
    setting = PEERS[peer].settings.get(key)
    if setting is None:
        known = ", ".join(PEERS[peer].settings)
        raise UsageError(f"--set {text!r}: {peer} has no setting {key!r} ({known})")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if type(value) is not type(setting.default) and not (
        isinstance(setting.default, float) and type(value) is int
    ):
        kind = type(setting.default).__name__
        raise UsageError(f"--set {text!r}: {peer}.{key} takes a {kind}")
    return peer, key, value


def settings_for(peers: list[str], overrides: list[str]) -> dict[str, dict[str, object]]:
    chosen = {name: PEERS[name].defaults() for name in peers}
    for text in overrides:
        peer, key, value = parse_override(text)
        chosen.setdefault(peer, PEERS[peer].defaults())[key] = value
    return {name: chosen[name] for name in peers}
