"""The dashboard included under a prefix, as a project might (tests of the mount)."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("ops/jobs/", include("queues.urls")),
]
