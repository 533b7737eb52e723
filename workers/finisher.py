"""Group commit of outcomes: the slots of a worker run that finish at about the same time
have their outcomes written together, in one `finish_job_runs` transaction (plain
completions in one UPDATE per claim).

No slot moves on before its own outcome is written, so the order of events is what it
would be with one `finish_job_run` per job (a sequential batch's next job still starts
after the previous one completed). The first slot to arrive writes for everyone waiting,
until nobody is; there is no extra thread and no timer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from queues.api import InvalidJob, Job, JobOutcome, RecordedOutcome

from .faults import retrying


@dataclass
class _Entry:
    job: Job
    outcome: JobOutcome
    done: threading.Event = field(default_factory=threading.Event)
    result: RecordedOutcome | None = None
    error: BaseException | None = None


class Finisher:
    def __init__(self, queue, using: str, give_up: threading.Event) -> None:
        self.queue = queue
        self.using = using
        self.give_up = give_up
        self._lock = threading.Lock()
        self._pending: list[_Entry] = []
        self._writing = False

    def finish(self, job: Job, outcome: JobOutcome) -> RecordedOutcome | None:
        """Write `outcome` (with whatever else is waiting); `faults.GaveUp` if the database
        stayed away until `give_up` was set."""
        entry = _Entry(job, _storable(outcome))
        with self._lock:
            self._pending.append(entry)
            leader = not self._writing
            self._writing = True
        if leader:
            self._write_all()
        entry.done.wait()
        if entry.error is not None:
            raise entry.error
        return entry.result

    def _write_all(self) -> None:
        while True:
            with self._lock:
                batch, self._pending = self._pending, []
                if not batch:
                    self._writing = False
                    return
            try:
                results = retrying(
                    lambda batch=batch: self._write(batch),
                    what=f"finishing {len(batch)} jobs",
                    using=self.using,
                    give_up=self.give_up,
                )
            except BaseException as exc:  # each waiting slot gets the error
                for entry in batch:
                    entry.error = exc
                    entry.done.set()
                continue
            for entry, result in zip(batch, results, strict=True):
                entry.result = result
                entry.done.set()

    def _write(self, batch: list[_Entry]) -> list[RecordedOutcome | None]:
        if len(batch) == 1:
            return [self.queue.finish_job_run(batch[0].job, batch[0].outcome)]
        return self.queue.finish_job_runs([(entry.job, entry.outcome) for entry in batch])


def _storable(outcome: JobOutcome) -> JobOutcome:
    """A result that cannot be stored fails the run instead (and not the whole group)."""
    if outcome.kind == "completed" and outcome.result is not None:
        from queues.validation import _check_json

        try:
            _check_json(outcome.result, "result")
        except InvalidJob as exc:
            return JobOutcome.failed(str(exc))
    return outcome
