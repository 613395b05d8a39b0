"""The console's pages, mounted under /admin/console/ and wrapped by the admin site's login and permission checks."""

from __future__ import annotations

from django.urls import include, path

app_name = "console"

urlpatterns = [
    path("", include("memories.console.dashboard_urls")),
    path("", include("memories.console.inspector_urls")),
]
