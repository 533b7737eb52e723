"""Django's `django.tasks` on Hammerweb's jobs: a task as a job (`jobs.py`) and a job as a
task's result (`results.py`). The backend users name in settings stays at
`queues.tasks_backend.HammerwebBackend`. See docs/design/vocabulary.md."""
