"""The attempts of a job as its page shows them: the newest failed attempts first (the one an
operator debugs is the latest), each with the worker that ran it. Read only when the page's
attempts region is drawn, not on each poll of its other regions. See docs/design/reads.md."""

from __future__ import annotations

from functools import cached_property

from queues.models import FailedAttempt, WorkerProcess

#: The attempts a job's page shows (a recurring job's history grows for as long as it fails);
#: the admin lists them all.
SHOWN = 25


class Timeline:
    def __init__(self, job_id) -> None:
        self.job_id = job_id

    @cached_property
    def _rows(self) -> list[FailedAttempt]:
        rows = list(FailedAttempt.objects.filter(job_id=self.job_id).order_by("-id")[: SHOWN + 1])
        # A rescue's or an operator's row names the claim's worker process, not its host and
        # pid: a process still registered tells them.
        unnamed = {row.worker_process for row in rows if not row.worker and row.worker_process}
        names = {
            process.id: f"{process.hostname}:{process.pid}"
            for process in WorkerProcess.objects.filter(id__in=unnamed)
        }
        for row in rows:
            row.worker_label = row.worker or names.get(row.worker_process)
        return rows

    @property
    def attempts(self) -> list[FailedAttempt]:
        """The newest `SHOWN` attempts, newest first."""
        return self._rows[:SHOWN]

    @property
    def more(self) -> bool:
        """Whether older attempts are not shown."""
        return len(self._rows) > SHOWN
