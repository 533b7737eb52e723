"""Live push of the dashboard over a WebSocket (ASGI with channels). `consumer` accepts staff
sessions and subscribes them; `aggregator` (one per web process) reads what the live partials
show and pushes those that changed; `render` draws them; `queues.store.listen` wakes the
aggregator on PostgreSQL NOTIFY. See docs/design/dashboard.md."""
