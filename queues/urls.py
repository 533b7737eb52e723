"""The dashboard's URLs, at the path projects include: `include("queues.urls")`."""

from queues.dashboard.urls import app_name, urlpatterns

__all__ = ["app_name", "urlpatterns"]
