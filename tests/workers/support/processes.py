"""The worker processes of a `runworker` the test started: registered (a `WorkerProcess`
row, so their signal handlers are installed) and alive. A pid is taken for one of them only
if it is the runworker itself or a child of it: the pids of dead workers are reused by the
machine's other processes (other test runs'), which a test must never signal."""

from __future__ import annotations

from pathlib import Path

from queues.models import WorkerProcess


def parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces; the state and the
    # parent's pid follow the last ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return None
    return int(fields[1])


def live_workers(runworker_pid: int) -> list[int]:
    """The registered, live worker processes of the runworker `runworker_pid`."""
    live = []
    for pid in WorkerProcess.objects.values_list("pid", flat=True):
        parent = parent_of(pid)
        if parent is not None and runworker_pid in (pid, parent):
            live.append(pid)
    return sorted(live)
