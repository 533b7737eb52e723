"""The worker defaults are written once, in workers/defaults.py: a bare `Worker`, a bare
`ProcessSettings`, and `runworker`'s parsed options and `--help` text all show them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from queues.api import JobQueue
from queues.options import DequeueOptions
from workers import defaults
from workers.api import Worker
from workers.management.commands.runworker import Command
from workers.process.host import ProcessSettings, WorkerProcessRuntime


def handler(job):
    return None


def parser():
    return Command().create_parser("manage.py", "runworker")


def seconds(duration: timedelta) -> str:
    return f"{duration.total_seconds():g}"


def test_the_lease_is_the_queue_apps_own_not_a_copy():
    assert defaults.LEASE is DequeueOptions().lease_duration


#: Each setting the three places share: its `Worker` attribute, its `ProcessSettings`
#: field, its `runworker` option, and its default.
SHARED = [
    ("batch_size", "batch_size", "batch_size", defaults.BATCH_SIZE),
    ("batch_concurrency", "concurrency", "concurrency", defaults.CONCURRENCY),
    ("lease_duration", "lease", "lease", defaults.LEASE),
    ("poll_interval", "poll_interval", "poll_interval", defaults.POLL_INTERVAL),
    ("shutdown_grace_period", "grace_period", "grace_period", defaults.GRACE_PERIOD),
]


@pytest.mark.parametrize(("attribute", "field", "option", "default"), SHARED)
def test_a_bare_worker_process_settings_and_runworker_agree(attribute, field, option, default):
    worker = Worker(JobQueue(), "emails", handler)
    settings = ProcessSettings(queues=["emails"])
    options = vars(parser().parse_args(["emails"]))
    assert (getattr(worker, attribute), getattr(settings, field), options[option]) == (
        default, default, default
    )


def test_the_settings_of_one_place_only_have_the_defaults_too():
    worker = Worker(JobQueue(), "emails", handler)
    assert worker.cancel_check_interval == defaults.CANCEL_CHECK_INTERVAL
    settings = ProcessSettings(queues=["emails"])
    assert settings.heartbeat_interval == defaults.HEARTBEAT_INTERVAL
    assert settings.progress_interval == defaults.PROGRESS_INTERVAL
    # The workers a bare ProcessSettings builds are bare workers.
    (built,) = WorkerProcessRuntime(settings).workers
    assert built.settings() == worker.settings()


def test_runworker_without_options_runs_the_defaults():
    options = vars(parser().parse_args(["emails"]))
    assert options["reaper_interval"] == defaults.REAPER_INTERVAL
    assert timedelta(days=options["prune_after"]) == defaults.PRUNE_AFTER
    built = Command()._settings(options)
    bare = ProcessSettings(queues=["emails"], process_id=built.process_id)
    assert [getattr(built, field) for _, field, _, _ in SHARED] == [
        getattr(bare, field) for _, field, _, _ in SHARED
    ]
    assert built.reaper.interval == defaults.REAPER_INTERVAL
    assert (built.pruner.older_than, built.pruner.interval) == (
        defaults.PRUNE_AFTER, defaults.PRUNE_INTERVAL
    )


@pytest.mark.parametrize(
    ("option", "shown"),
    [
        ("--batch-size BATCH_SIZE", str(defaults.BATCH_SIZE)),
        ("--concurrency CONCURRENCY", str(defaults.CONCURRENCY)),
        ("--lease LEASE", seconds(defaults.LEASE)),
        ("--poll-interval POLL_INTERVAL", seconds(defaults.POLL_INTERVAL)),
        ("--grace-period GRACE_PERIOD", seconds(defaults.GRACE_PERIOD)),
        ("--reaper-interval REAPER_INTERVAL", seconds(defaults.REAPER_INTERVAL)),
        ("--prune-after DAYS", f"{defaults.PRUNE_AFTER / timedelta(days=1):g}"),
    ],
)
def test_runworker_help_shows_the_defaults(option, shown):
    text = " ".join(parser().format_help().split())  # argparse wraps lines where it likes
    found = re.search(re.escape(option) + r" (.*?)(?= -|$)", text)
    assert found, f"{option} is not in the help"
    assert re.search(rf"\(default {re.escape(shown)}\b", found.group(1)), found.group(1)
