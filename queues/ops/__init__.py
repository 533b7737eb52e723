"""Services that keep the queues in shape and act on many jobs: each works through the queue it
is given (its methods, and its store for the rest), so each runs on a `TestQueue` too. Worker
processes and the trigger-kept counters stay SQL-only: processes and database triggers write
them, so the memory store has none to prune. See docs/design/maintenance.md."""
