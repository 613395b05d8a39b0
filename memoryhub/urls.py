from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memoryhub import landing
from memoryhub.api import handler, health
from memoryhub.api.metrics import metrics_view

admin.site.site_url = "/"  # the admin's "View site": the landing page

urlpatterns = [
    path("", landing.landing, name="landing"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[], permission_classes=[]),
        name="docs",
    ),
    path("admin/console/", include("memories.console.urls")),
    path("admin/", admin.site.urls),
    path("v1/", include("memories.api.urls")),
    path("v1/", include("memories.longterm.api.urls")),
    path("v1/", include("diaries.urls")),
    path("v1/", include("tables.urls")),
    path("v1/", include("memories.compact.api.urls")),
    path("v1/", include("memories.state.api.urls")),
    path("v1/", include("memories.story.api.urls")),
    path("v1/", include("memories.lifecycle.api.urls")),
    path("v1/", include("memories.webhooks.api.urls")),
    path("hinos/v1/", include("memories.hinos.api.urls")),
]

handler400 = handler.json_400
handler403 = handler.json_403
handler404 = handler.json_404
handler500 = handler.json_500
