from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from queues.dashboard.views import probes

urlpatterns = [
    path("admin/", admin.site.urls),
    # For machines: Prometheus (staff or HAMMERWEB["METRICS_TOKEN"]) and a load balancer.
    path("metrics/", probes.metrics, name="metrics"),
    path("healthz", probes.healthz, name="healthz"),
    path("", include("queues.urls")),
]
