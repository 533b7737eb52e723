"""ASGI entry point: the pages over HTTP and the dashboard's WebSocket (channels).

`manage.py runserver` serves this with daphne (listed in INSTALLED_APPS); in production run
`daphne hammerweb.asgi:application`. Under WSGI (hammerweb.wsgi) there is no WebSocket and the
dashboard keeps polling every 2 s. A project of its own needs the same lines (README, "Add
Hammerweb to your project").
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

import queues.routing  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(queues.routing.websocket_urlpatterns))
        ),
    }
)
