"""Live push of the dashboard over a WebSocket (ASGI with channels).

`consumer` accepts staff sessions and subscribes them; `aggregator` (one per event loop, so one
per web process) reads what the live partials show and pushes the partials that changed to a
channels group; `listen` wakes it on PostgreSQL NOTIFY; `render` draws the partials.
"""
