"""The operator's web pages: views (GET pages with live regions, POST actions that each call
one `JobQueue` method), the live push over a WebSocket, the routes, and server-drawn SVG
charts. See docs/design/dashboard.md."""
