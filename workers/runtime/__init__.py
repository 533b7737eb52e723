"""The worker run, split by concern: the claimer and the slots, each in its own thread,
sharing one state (run.py, state.py, handoffs.py), and the hub whose writer and heartbeat
serve every run of a process (hub.py). See docs/design/worker.md."""

from workers.runtime.handoffs import FRESH_START, HeldJob, Request
from workers.runtime.run import WorkerRun
from workers.runtime.state import RunState
from workers.runtime.writer import LINGER

__all__ = ["FRESH_START", "LINGER", "HeldJob", "Request", "RunState", "WorkerRun"]
