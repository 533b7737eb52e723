"""Read-only queries behind the dashboard, the admin, the metrics and the CLI: bounded by an
index and a window or a LIMIT, never a COUNT(*) of the jobs table, never OFFSET. Every write
goes through `JobQueue`. See docs/design/reads.md."""
