"""The worker run, split by concern (see run.py)."""

from .run import WorkerRun
from .state import FRESH_START, HeldJob, Request, RunState
from .writer import LINGER

__all__ = ["FRESH_START", "LINGER", "HeldJob", "Request", "RunState", "WorkerRun"]
