"""The dashboard: pages (GET, live regions re-rendered as partials) and actions (POST, each
one engine method of `JobQueue`)."""
