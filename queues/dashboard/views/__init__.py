"""The dashboard's views: pages (GET, live regions re-rendered as partials) and actions (POST,
each one engine method of `JobQueue`), with what they all share in `access`.
See docs/design/dashboard.md."""
