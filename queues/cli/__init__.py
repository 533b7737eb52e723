"""`manage.py jobs`: the operator's command line over the engine (list, show, retry, cancel,
delete, purge, pause, resume, stats). The command (`queues/management/commands/jobs.py`)
parses and dispatches; these modules read input, select jobs, act and print.
See docs/design/cli.md."""
