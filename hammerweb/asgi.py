"""ASGI entry point: the pages over HTTP and the dashboard's WebSocket (channels).

`manage.py runserver` serves this with daphne (listed in INSTALLED_APPS); in production run
`daphne hammerweb.asgi:application`. Under WSGI (hammerweb.wsgi) there is no WebSocket and the
dashboard keeps polling every 2 s.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hammerweb.settings")
# Set up Django (apps, settings) before importing anything that touches models.
http_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

from queues.live.consumer import DashboardConsumer  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(
                URLRouter(
                    [
                        path("ws/dashboard/", DashboardConsumer.as_asgi()),
                        path("ws/dashboard/<slug:page>/", DashboardConsumer.as_asgi()),
                    ]
                )
            )
        ),
    }
)
