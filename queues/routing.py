"""The dashboard's WebSocket routes, at the path projects name in their ASGI router:
`URLRouter(queues.routing.websocket_urlpatterns)`."""

from queues.dashboard.routing import socket_url, websocket_urlpatterns

__all__ = ["socket_url", "websocket_urlpatterns"]
