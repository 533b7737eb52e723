"""`runworker`'s command line: its options and their checks, and the arguments that give a
child process the same settings (with its own ports). See docs/design/processes.md."""

from __future__ import annotations

import argparse
from datetime import timedelta

from queues.cli.parsing import queue_name_argument
from workers import defaults
from workers.process.logformat import FORMATS
from workers.process.probes import address
from workers.process.serving import PORT_OPTIONS

#: `--prune-after` counts days.
PRUNE_AFTER_DAYS = defaults.PRUNE_AFTER / timedelta(days=1)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def seconds(text: str, allow_zero: bool = False) -> timedelta:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0 or (value == 0 and not allow_zero) or value != value:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return timedelta(seconds=value)


def seconds_or_zero(text: str) -> timedelta:
    return seconds(text, allow_zero=True)


def in_seconds(duration: timedelta) -> str:
    """A duration as the help text gives it: 300, 0.5."""
    return f"{duration.total_seconds():g}"


def days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 (never) or a positive number of days")
    return value


def add_arguments(parser) -> None:
    """runworker's options."""
    parser.add_argument("queues", nargs="+", type=queue_name_argument, metavar="QUEUE")
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=defaults.BATCH_SIZE,
        help=f"jobs claimed at once per queue (default {defaults.BATCH_SIZE})",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=defaults.CONCURRENCY,
        help=f"jobs run at once per queue (default {defaults.CONCURRENCY})",
    )
    parser.add_argument(
        "--lease",
        type=seconds,
        default=defaults.LEASE,
        help=f"lease of each claimed job, in seconds (default {in_seconds(defaults.LEASE)})",
    )
    parser.add_argument(
        "--poll-interval",
        type=seconds,
        default=defaults.POLL_INTERVAL,
        help=f"seconds between polls of an empty queue (default "
        f"{in_seconds(defaults.POLL_INTERVAL)})",
    )
    parser.add_argument(
        "--grace-period",
        type=seconds_or_zero,
        default=defaults.GRACE_PERIOD,
        help=f"seconds running jobs get to finish on stop (default "
        f"{in_seconds(defaults.GRACE_PERIOD)})",
    )
    parser.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        help="worker processes (default 1: this one); above 1, "
        "supervised child processes, restarted when they die",
    )
    parser.add_argument(
        "--spawn",
        action="store_true",
        help="with --processes: start each child as a new interpreter "
        "instead of forking it from this set-up process",
    )
    parser.add_argument(
        "--burst", action="store_true", help="exit (0) once the queues have nothing left to claim"
    )
    parser.add_argument(
        "--reaper-interval",
        type=seconds_or_zero,
        default=defaults.REAPER_INTERVAL,
        help=f"seconds between reaper passes (default "
        f"{in_seconds(defaults.REAPER_INTERVAL)}; 0: no reaper)",
    )
    parser.add_argument(
        "--prune-after",
        type=days,
        default=PRUNE_AFTER_DAYS,
        metavar="DAYS",
        help=f"delete finished jobs and reaper runs older than this "
        f"many days (default {PRUNE_AFTER_DAYS:g}; 0: never)",
    )
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module too (for its handlers or tasks)",
    )
    parser.add_argument("--database", default="default", help="database alias")
    parser.add_argument(
        "--metrics-port",
        type=address,
        metavar="[HOST:]PORT",
        help="serve this process's Prometheus metrics on PORT (with "
        "--processes N: child i on PORT+i)",
    )
    parser.add_argument(
        "--health-port",
        type=address,
        metavar="[HOST:]PORT",
        help="answer 200 on PORT while the workers' threads are alive "
        "and the database answers, else 503 (with --processes N: "
        "child i on PORT+i)",
    )
    parser.add_argument(
        "--no-schedules",
        action="store_true",
        help="do not synchronise HAMMERWEB['SCHEDULES'] at start (manage.py syncschedules does it)",
    )
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default="text",
        help="text (default) or json: one JSON object per line on stderr",
    )
    parser.add_argument(
        "--log-jobs",
        action="store_true",
        help="log a line per job event (started, succeeded, failed, "
        "retried, dead, reaped, cancelled) on the logger workers.jobs",
    )


def child_args(options) -> list[str]:
    """This command's settings for a child process: the same, in one process."""
    args = [
        *options["queues"],
        *("--batch-size", str(options["batch_size"])),
        *("--concurrency", str(options["concurrency"])),
        *("--lease", str(options["lease"].total_seconds())),
        *("--poll-interval", str(options["poll_interval"].total_seconds())),
        *("--grace-period", str(options["grace_period"].total_seconds())),
        *("--reaper-interval", str(options["reaper_interval"].total_seconds())),
        *("--prune-after", str(options["prune_after"])),
        *("--database", options["database"]),
        *("--verbosity", str(options["verbosity"])),
        *("--log-format", options["log_format"]),
        *("--processes", "1"),
        "--skip-checks",  # the supervisor ran them
        "--no-schedules",  # and synchronised the schedules
    ]
    for module in options["include"]:
        args += ["--include", module]
    if options["burst"]:
        args.append("--burst")
    if options["log_jobs"]:
        args.append("--log-jobs")
    return args


def own_ports(options, index: int) -> dict[str, tuple[str, int]]:
    """Child `index`'s own ports: PORT+index of each port option."""
    return {
        name: (options[name][0], options[name][1] + index) for name in PORT_OPTIONS if options[name]
    }


def child_ports(options, index: int) -> list[str]:
    """Child `index`'s own ports as arguments."""
    args = []
    for name, (host, port) in own_ports(options, index).items():
        args += [f"--{name.replace('_', '-')}", f"{host}:{port}"]
    return args
