"""`manage.py benchqueue`: throughput on the current database, with the raw-SQL limit of the
same claim-and-complete loop measured in the same run. Informative, never a test gate."""

from __future__ import annotations

import json
import platform

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from hammerweb.measure.benchmark import pickup, runs, runworker
from hammerweb.measure.benchmark.pickup import report_pickup
from queues import signals
from queues.api import JobQueue

WORKERS = [
    ("single-job worker", 1, 1),
    ("batch worker (10, sequential)", 10, 1),
    ("batch worker (50, concurrency 10)", 50, 10),
]


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


class Command(BaseCommand):
    help = "Measure claim, worker and enqueue throughput against the raw-SQL limit."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=positive, default=2000, help="jobs per measurement")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        parser.add_argument(
            "--receiver",
            action="store_true",
            help="connect a receiver that does nothing to every lifecycle signal: what "
            "sending them costs",
        )
        parser.add_argument(
            "--pickup",
            type=int,
            default=0,
            metavar="N",
            help="also measure idle pickup latency over N jobs: a runworker child with default "
            "options, jobs enqueued one at a time from this process (0: not measured)",
        )
        parser.add_argument(
            "--pickup-only", action="store_true", help="measure only the pickup latency"
        )
        parser.add_argument(
            "--no-runworker",
            action="store_true",
            help="leave out the figures of runworker in child processes",
        )
        parser.add_argument(
            "--repeat",
            type=positive,
            default=1,
            help="run every measurement this many times, in turn, and report the median",
        )

    def handle(self, *args, jobs: int, json: bool, repeat: int = 1, **options):
        if jobs < 1 or repeat < 1:
            raise CommandError("--jobs and --repeat must be at least 1")
        if options.get("receiver"):
            for signal in signals.ALL:
                signal.connect(_heard, dispatch_uid="benchqueue")
        pickup_jobs = options.get("pickup") or 0
        if pickup_jobs < 0 or (options.get("pickup_only") and not pickup_jobs):
            raise CommandError("--pickup must be at least 1 with --pickup-only (0: not measured)")
        try:
            if not options.get("pickup_only"):
                self._measure(jobs, json, repeat, not options.get("no_runworker"))
            if pickup_jobs:
                report_pickup(self, pickup.measure(pickup_jobs), json)
        finally:
            for signal in signals.ALL:
                signal.disconnect(dispatch_uid="benchqueue")

    def _measure(self, jobs: int, json: bool, repeat: int, children: bool = True) -> None:
        if settings.DEBUG:
            self.stderr.write(
                "DEBUG is on: Django records every query, which slows each figure; "
                "measure with DJANGO_DEBUG=0."
            )
        queue = JobQueue()
        steps = [
            ("claim", lambda: runs.claim_rate(queue, jobs, 1)),
            *[(f"claim {n}", lambda n=n: runs.claim_rate(queue, jobs, n)) for n in (10, 50, 100)],
            *[
                (f"loop {n}", lambda n=n: runs.claim_complete_rate(queue, jobs, n))
                for n in (1, 100)
            ],
            *[
                (f"loop {n} limited", lambda n=n: runs.claim_complete_rate(queue, jobs, n, True))
                for n in (1, 100)
            ],
            *[(f"raw {n}", lambda n=n: runs.raw_rate(jobs, n, queue)) for n in (1, 100)],
            *[
                (label, lambda a=(label, size, conc): runs.worker_rate(queue, jobs, *a))
                for label, size, conc in WORKERS
            ],
            ("enqueue", lambda: runs.enqueue_rates(queue, jobs)),
        ]
        if children:
            steps.append(("runworker", lambda: runworker.runworker_rates(queue, jobs)))
        # Rounds in turn (not each measurement N times in a row), so that a passing load on
        # the machine spreads over every measurement instead of spoiling one.
        rounds: list[list[runs.Figure]] = []
        total = len(steps) * repeat
        for round_number in range(repeat):
            figures: list[runs.Figure] = []
            for number, (label, step) in enumerate(steps, 1):
                if not json:
                    done = round_number * len(steps) + number
                    self.stderr.write(f"[{done}/{total}] {label} ...")
                result = step()
                figures.extend(result if isinstance(result, list) else [result])
            rounds.append(figures)
        self._report(runs.medians(rounds), jobs, json, repeat)

    def _report(self, figures, jobs, as_json, repeat):
        single = next(f.rate for f in figures if f.group == "claim" and f.label == "single")
        raw = {f.label.rsplit(" ", 1)[-1]: f.rate for f in figures if f.label.startswith("raw")}
        raw_100 = raw.get("100") or 0.0
        rows = []
        for f in figures:
            ratio = ""
            if f.group == "claim":
                ratio = f"{f.rate / single:.1f}x single"
            elif f.group in ("claim+complete", "worker") and raw_100:
                ratio = f"{f.rate / raw_100:.0%} of raw batch 100"
            rows.append(
                {
                    "group": f.group,
                    "label": f.label,
                    "jobs": f.jobs,
                    "seconds": round(f.seconds, 4),
                    "jobs_per_second": round(f.rate, 1),
                    "ratio": ratio,
                    # Measured for the runworker children only (None elsewhere).
                    "worker_cpu_us_per_job": _rounded(f.per_job_us(f.worker_cpu)),
                    "server_cpu_us_per_job": _rounded(f.per_job_us(f.server_cpu)),
                    "statements_per_100_jobs": _rounded(f.statements_per_100),
                }
            )
        meta = {
            "vendor": connection.vendor,
            "database": connection.display_name,
            "python": platform.python_version(),
            "jobs": jobs,
            "repeat": repeat,
            "debug": settings.DEBUG,
        }
        if as_json:
            self.stdout.write(json.dumps({"meta": meta, "figures": rows}, indent=2))
            return
        median = f", median of {repeat} runs" if repeat > 1 else ""
        self.stdout.write(f"{meta['database']} ({meta['vendor']}), {jobs} jobs per figure{median}")
        self.stdout.write(f"{'group':<16}{'measurement':<36}{'jobs/s':>10}  ratio")
        for row in rows:
            rate, ratio = row["jobs_per_second"], row["ratio"]
            if row["worker_cpu_us_per_job"] is not None:
                server = row["server_cpu_us_per_job"]
                ratio = f"CPU a job: worker {row['worker_cpu_us_per_job']:.0f} µs, server " + (
                    f"{server:.0f} µs" if server is not None
                    else "in the worker's" if connection.vendor == "sqlite" else "not measured"
                )  # fmt: skip
                if row["statements_per_100_jobs"] is not None:
                    ratio += f"; {row['statements_per_100_jobs']:.1f} statements a 100 jobs"
            self.stdout.write(f"{row['group']:<16}{row['label']:<36}{rate:>10.0f}  {ratio}")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _heard(signal, sender, **arguments) -> None:
    """The receiver of `--receiver`: the signal's cost without a receiver's own."""
