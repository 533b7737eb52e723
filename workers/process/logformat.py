"""How `runworker` logs: lines of text, or one JSON object per line (`--log-format json`), and
with `--log-jobs` a line per job event, logged by a receiver of the lifecycle signals
(`queues.signals`) on the logger `workers.jobs`, with the job's fields in the record (for the
JSON lines: `job_id`, `queue`, `attempt`, `run_time`, `outcome`, `status`, `error`)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from queues import signals

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FORMATS = ("text", "json")
#: The job fields a record may carry (in `extra`); a JSON line holds those it has.
JOB_FIELDS = ("job_id", "queue", "attempt", "run_time", "outcome", "status", "error")
#: The signals a worker's job log hears: what happens to the jobs it runs.
LOGGED = (
    signals.job_started, signals.job_succeeded, signals.job_failed, signals.job_reaped,
    signals.job_cancelled, signals.job_retried, signals.job_dead,
)  # fmt: skip

job_log = logging.getLogger("workers.jobs")


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: timestamp (UTC, ISO 8601), level, logger, message,
    process, the job fields it carries, and the exception's traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        for name in JOB_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value if isinstance(value, int | float | str) else str(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def formatter(log_format: str) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def log_job_event(signal, sender, job, job_id, queue_name, attempt, **arguments) -> None:
    """A receiver: one line for the event, its fields in the record."""
    outcome = signal.name.removeprefix("job_")
    run_time = arguments.get("run_time")
    error = arguments.get("error")
    took = f" in {run_time:.3f}s" if run_time is not None else ""
    # The message names the error by its first line; the field holds all of it.
    why = f": {error.splitlines()[0]}" if error and outcome != "retried" else ""
    fields = {
        "job_id": str(job_id),
        "queue": queue_name,
        "attempt": attempt,
        "run_time": None if run_time is None else round(run_time, 6),
        "outcome": outcome,
        "status": arguments.get("status") or job.status,
        "error": error,
    }
    level = logging.WARNING if outcome == "dead" else logging.INFO
    job_log.log(
        level,
        "job %s of %s %s (attempt %s)%s%s",
        job_id, queue_name, outcome, attempt, took, why, extra=fields,
    )  # fmt: skip


def log_jobs() -> None:
    """Log every job event of this process (`--log-jobs`)."""
    for signal in LOGGED:
        signal.connect(log_job_event, dispatch_uid="workers.process.logformat.log_job_event")
