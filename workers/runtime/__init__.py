"""The worker run, split by concern: the claimer, the slots, the writer and the heartbeat,
each in its own thread, sharing one state (run.py, state.py, handoffs.py). See
docs/design/worker.md."""

from workers.runtime.handoffs import FRESH_START, HeldJob, Request
from workers.runtime.run import WorkerRun
from workers.runtime.state import RunState
from workers.runtime.writer import LINGER

__all__ = ["FRESH_START", "LINGER", "HeldJob", "Request", "RunState", "WorkerRun"]
