"""The worker run, split by concern (see run.py)."""

from workers.runtime.run import WorkerRun
from workers.runtime.state import FRESH_START, HeldJob, Request, RunState
from workers.runtime.writer import LINGER

__all__ = ["FRESH_START", "LINGER", "HeldJob", "Request", "RunState", "WorkerRun"]
