"""`manage.py runworker QUEUE [QUEUE ...]`: run the handlers of these queues (and the
django.tasks tasks enqueued on them) until stopped, or until they are empty (`--burst`);
with `--processes N`, as N supervised child processes, forked from this one once it is set
up. The first SIGTERM/SIGINT drains, the second forces the exit; a clean drain exits without
the interpreter's teardown. Option defaults: workers/defaults.py. See
docs/design/processes.md."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from queues.api import JobQueue, QueueError
from queues.ops.bulk import BulkRunner
from queues.ops.health import unapplied_migrations
from queues.ops.maintenance import Pruner, Reaper
from workers import defaults
from workers.process.arguments import add_arguments, child_args, child_ports, own_ports
from workers.process.children import (
    PROCESS_ID_ENV,
    CannotStart,
    assigned_process_id,
    report_failed,
    report_started,
    watch_supervisor,
)
from workers.process.forking import exit_now
from workers.process.host import ProcessSettings, WorkerProcessRuntime
from workers.process.lifeline import ChildLifeline
from workers.process.logformat import formatter, log_jobs
from workers.process.serving import check_port_range, serving_probes
from workers.process.supervisor import Supervisor
from workers.registry import autodiscover, handler_for
from workers.runtime.faults import GaveUp, retrying

logger = logging.getLogger("workers")
#: How long a supervisor that stops waits for the hand-back of its last children's jobs.
LIFELINE_PATIENCE = 30.0


class Command(BaseCommand):
    help = "Run workers for the given queues (Hammerweb)."

    def add_arguments(self, parser):
        add_arguments(parser)

    def run_from_argv(self, argv):
        super().run_from_argv(argv)  # an error or a forced stop raises SystemExit
        exit_now(0)  # a clean drain: nothing is left that the teardown would do for us

    def handle(self, *args, **options):
        self._configure_logging(options["verbosity"], options["log_format"])
        if options["log_jobs"]:
            log_jobs()
        stop, force = threading.Event(), threading.Event()
        previous = self._install_signals(stop, force)
        try:
            self._run(options, stop, force)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _run(self, options, stop: threading.Event, force: threading.Event) -> None:
        check_port_range(options)
        if options["processes"] > 1:
            self._check_migrated(options, stop)
            self._supervise(options, stop, force)
            return
        self._import_handlers(options)  # a bad --include is refused before the database
        self._check_migrated(options, stop)
        self._sync_schedules(options, stop)
        watch_supervisor(stop)
        for name in options["queues"]:
            if handler_for(name) is None:
                logger.warning(
                    "no handler is registered for queue %s: only django.tasks "
                    "tasks will succeed there",
                    name,
                )
        runtime = WorkerProcessRuntime(self._settings(options))
        with serving_probes(options, runtime):
            report_started()
            summary = runtime.run(stop, force)
        if options["verbosity"] >= 1:
            self.stdout.write(f"runworker: {summary}")
        if summary.forced or summary.crashed:
            sys.exit(1)

    def _supervise(self, options, stop: threading.Event, force: threading.Event) -> None:
        self._sync_schedules(options, stop)
        if not options["spawn"]:
            try:  # imported once, for every forked child
                self._import_handlers(options)
            except Exception:
                pass  # the children fail the same way, and the supervisor gives up with it
        lifeline = ChildLifeline(options["database"], force)
        supervisor = Supervisor(
            child_args(options),
            options["processes"],
            options["burst"],
            on_exit=lifeline.child_ended,
            own_args=lambda index: child_ports(options, index),
            fork_child=None if options["spawn"] else partial(self._forked_child, options),
        )
        try:
            code = supervisor.run(stop, force)
        except CannotStart as exc:
            raise CommandError(str(exc)) from exc
        finally:
            lifeline.wait(LIFELINE_PATIENCE)
        if code:
            sys.exit(code)

    def _forked_child(self, options, index: int) -> int:
        """Child `index`, forked from the supervisor: what `runworker --processes 1` with
        `child_args` would run, without importing and setting up everything again."""
        child = {**options, **own_ports(options, index), "processes": 1, "no_schedules": True}
        stop, force = threading.Event(), threading.Event()
        self._install_signals(stop, force)
        try:
            self._run(child, stop, force)
        except CommandError as exc:  # written as Django writes it, and told the supervisor
            self.stderr.write(f"CommandError: {exc}")
            report_failed(f"CommandError: {exc}")
            return exc.returncode
        except Exception as exc:
            traceback.print_exc()
            report_failed(traceback.format_exception_only(exc)[-1])
            return 1
        return 0

    def _check_migrated(self, options, stop: threading.Event) -> None:
        """A database without Hammerweb's tables (or with migrations not yet applied) is
        a set-up to fix, not an outage to wait out. A forked child skips the check: its
        supervisor made it."""
        if os.environ.get(PROCESS_ID_ENV):
            return
        using = options["database"]
        try:
            missing = retrying(
                lambda: unapplied_migrations(using),
                what="reading the applied migrations",
                using=using,
                give_up=stop,
            )
        except GaveUp:
            return
        except DatabaseError as exc:  # e.g. a role that may not read django_migrations
            logger.warning("the applied migrations could not be read (%s): not checked", exc)
            return
        if missing:
            raise CommandError(
                f"database {using!r} lacks {len(missing)} of Hammerweb's migrations "
                f"(the last: queues.{missing[-1]}): run `manage.py migrate` first"
            )

    def _import_handlers(self, options) -> None:
        for module in options["include"]:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise CommandError(f"cannot import {module}: {exc}") from exc
        autodiscover()

    def _sync_schedules(self, options, stop: threading.Event) -> None:
        """The declared schedules' rows, in line with the settings before any job runs
        (a supervisor syncs for its children, which are started with --no-schedules)."""
        if options["no_schedules"]:
            return
        using = options["database"]
        queue = JobQueue(using=using)
        try:
            report = retrying(
                queue.sync_schedules,
                what="synchronising the declared schedules",
                using=using,
                give_up=stop,
            )
        except GaveUp:
            return
        except QueueError as exc:  # a bad HAMMERWEB["SCHEDULES"], with the checks skipped
            raise CommandError(str(exc)) from exc
        if any(vars(report).values()):
            logger.info("schedules: %s", report)

    def _settings(self, options) -> ProcessSettings:
        queue = JobQueue(using=options["database"])
        reaper = None
        if options["reaper_interval"]:
            reaper = Reaper(queue, options["reaper_interval"], ran_by=f"runworker:{_me()}")
        # Always a pruner: with --prune-after 0 it keeps finished jobs but still deletes
        # the bookkeeping rows (old completion counts, dead worker processes).
        prune_after = options["prune_after"]
        pruner = Pruner(
            queue,
            timedelta(days=prune_after) if prune_after > 0 else None,
            interval=defaults.PRUNE_INTERVAL,
        )
        return ProcessSettings(
            queues=options["queues"],
            batch_size=options["batch_size"],
            concurrency=options["concurrency"],
            lease=options["lease"],
            poll_interval=options["poll_interval"],
            burst=options["burst"],
            grace_period=options["grace_period"],
            reaper=reaper,
            pruner=pruner,
            bulk=BulkRunner(queue, ran_by=f"runworker:{_me()}"),
            using=options["database"],
            process_id=assigned_process_id(),
        )

    def _install_signals(self, stop: threading.Event, force: threading.Event) -> dict:
        """First signal: drain; second: force. Returns the handlers it replaced."""

        def on_signal(signum, frame):
            # The event before the log line: a second signal can run this handler again
            # while the first one is still logging, and must then find the drain begun.
            if stop.is_set():
                force.set()
                logger.warning("second %s: forcing exit", signal.Signals(signum).name)
            else:
                stop.set()
                logger.warning("%s: draining (again to force)", signal.Signals(signum).name)

        previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, on_signal)
        return previous

    def _configure_logging(self, verbosity: int, log_format: str) -> None:
        level = {0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
        logging.getLogger("workers").setLevel(level)
        for name in ("workers", "queues"):
            named = logging.getLogger(name)
            for handler in [h for h in named.handlers if getattr(h, "runworker", False)]:
                named.removeHandler(handler)  # an earlier call's, in this process
            if log_format == "json":
                # Asked for: every line JSON on stderr, none through the project's text
                # handlers (a project that wants JSON elsewhere uses JsonFormatter in its
                # LOGGING, without --log-format).
                for handler in list(named.handlers):
                    named.removeHandler(handler)
                named.propagate, named.runworker_json = False, True
            else:
                if getattr(named, "runworker_json", False):  # an earlier call's, undone
                    named.propagate, named.runworker_json = True, False
                if named.hasHandlers():
                    continue
            # A project that configures no logging for us still sees the progress.
            handler = logging.StreamHandler()
            handler.setFormatter(formatter(log_format))
            handler.runworker = True
            named.addHandler(handler)
        if verbosity >= 3:
            logging.getLogger("queues").setLevel(logging.DEBUG)
        if settings.DEBUG:
            logger.warning(
                "DEBUG is on: Django records every query each worker thread runs, which "
                "slows the worker; run it with DEBUG = False in production"
            )


def _me() -> str:
    import os
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"
