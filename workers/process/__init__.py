"""Worker processes: one process's workers, maintenance thread and `WorkerProcess` row
(host.py), the supervisor of `runworker --processes N` and its lifeline, and what a
process serves beside its work (probes). See docs/design/processes.md."""
