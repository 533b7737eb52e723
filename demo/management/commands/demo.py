"""`manage.py demo`: a demo user, sample jobs, the dashboard and a worker, in one command.

It exists where the demo app is installed, that is with HAMMERWEB_DEMO=1 (see
hammerweb/settings.py); `make demo` sets it, runs `migrate` and then this. The worker is
`manage.py runworker` in a child process; where that command is not installed, a small
stand-in thread here plays the worker (claims, runs for a moment, completes or fails through
the engine), so the dashboard moves.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from demo import data as demo_data
from queues.api import DequeueOptions, JobOutcome, JobQueue
from queues.models import Job

DEMO_USER, DEMO_PASSWORD = "demo", "demo"
VIEWER_USER, VIEWER_PASSWORD = "viewer", "viewer"


class Command(BaseCommand):
    help = "Load sample jobs and serve the dashboard with a worker (for a first look)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument(
            "--no-serve", action="store_true", help="only create the users and load the sample jobs"
        )
        parser.add_argument(
            "--no-traffic",
            action="store_true",
            help="do not keep enqueueing new jobs while serving",
        )

    def handle(
        self, *args, addr: str, port: str, no_serve: bool, no_traffic: bool, **options
    ) -> None:
        self._users()
        if Job.objects.exists():
            self.stdout.write("Sample jobs: the database already holds jobs; none added.")
        else:
            loaded = demo_data.load(JobQueue())
            self.stdout.write(f"Sample jobs: {loaded['jobs']} over {loaded['queues']} queues.")
        if no_serve:
            return
        stop = threading.Event()
        worker = self._start_worker(stop)
        if not no_traffic:
            threading.Thread(target=_traffic, args=(stop,), daemon=True).start()
        url = f"http://{addr}:{port}/"
        self.stdout.write(
            self.style.SUCCESS(
                f"\nDashboard: {url}\n"
                f"Log in as {DEMO_USER} / {DEMO_PASSWORD} (may do everything) or "
                f"{VIEWER_USER} / {VIEWER_PASSWORD} (may only look).\nStop with Ctrl-C.\n"
            )
        )
        try:
            call_command("runserver", f"{addr}:{port}", use_reloader=False)
        finally:
            stop.set()
            if worker is not None:
                worker.terminate()
                try:
                    worker.wait(timeout=35)
                except subprocess.TimeoutExpired:
                    worker.kill()

    def _users(self) -> None:
        users = get_user_model()
        demo, _ = users.objects.get_or_create(username=DEMO_USER)
        demo.is_staff = demo.is_superuser = True
        demo.set_password(DEMO_PASSWORD)
        demo.save()
        viewer, _ = users.objects.get_or_create(username=VIEWER_USER)
        viewer.is_staff, viewer.is_superuser = True, False
        viewer.set_password(VIEWER_PASSWORD)
        viewer.save()
        viewer.user_permissions.set(
            Permission.objects.filter(
                content_type__app_label="queues", codename__startswith="view_"
            )
        )
        self.stdout.write(
            f"Users: {DEMO_USER} / {DEMO_PASSWORD} (superuser), "
            f"{VIEWER_USER} / {VIEWER_PASSWORD} (staff, read-only)."
        )

    def _start_worker(self, stop: threading.Event):
        if "runworker" in get_commands():
            # The handlers of these queues are in this app's jobs.py; the child inherits
            # HAMMERWEB_DEMO=1, so it installs this app and finds them.
            manage = str(settings.BASE_DIR / "manage.py")
            command = [
                sys.executable,
                manage,
                "runworker",
                *demo_data.QUEUES,
                "--batch-size",
                "5",
                "--concurrency",
                "2",
                "--poll-interval",
                "0.5",
            ]
            self.stdout.write(f"Worker: manage.py {' '.join(command[2:])}")
            worker = subprocess.Popen(command)
            try:
                code = worker.wait(timeout=3)
            except subprocess.TimeoutExpired:
                return worker  # still running: it is working
            self.stdout.write(self.style.WARNING(f"Worker: runworker stopped ({code})."))
        else:
            self.stdout.write(
                self.style.WARNING("Worker: `manage.py runworker` is not installed here.")
            )
        self.stdout.write("Worker: a stand-in thread plays the worker.")
        threading.Thread(target=_stand_in_worker, args=(stop,), daemon=True).start()
        return None


def _traffic(stop: threading.Event) -> None:
    queue, rng = JobQueue(), random.Random()
    while not stop.wait(2.0):
        try:
            demo_data.traffic(queue, rng)
        finally:
            close_old_connections()


def _stand_in_worker(stop: threading.Event) -> None:
    """Claims a few jobs of each queue, 'runs' them briefly and records an outcome."""
    queue, rng = JobQueue(), random.Random()
    while not stop.wait(1.0):
        try:
            for name in demo_data.QUEUES:
                for job in queue.dequeue(name, DequeueOptions.batch(3)):
                    time.sleep(rng.uniform(0.02, 0.2))
                    if job.queue_name == "flaky" and rng.random() < 0.3:
                        outcome = JobOutcome.failed(rng.choice(demo_data.FLAKY_ERRORS))
                    else:
                        outcome = JobOutcome.completed({"ok": True})
                    queue.finish_job_run(job, outcome)
        finally:
            close_old_connections()
