"""The workers app: `Worker` runs one queue's jobs with a handler (`workers.api`), and
`manage.py runworker` runs workers in one or more processes. Defaults: defaults.py.
See docs/design/worker.md and docs/design/processes.md."""
