from django.contrib import admin
from django.urls import include, path

from memories.mcp.api.server import mcp_server
from memoryhub import landing
from memoryhub.api import handler, health
from memoryhub.api.metrics import metrics_view
from memoryhub.api.schema_views import SchemaView, SwaggerView

admin.site.site_url = "/"  # the admin's "View site": the landing page

urlpatterns = [
    path("", handler.read_only_view(landing.landing), name="landing"),
    path("healthz", handler.read_only_view(health.healthz), name="healthz"),
    path("readyz", handler.read_only_view(health.readyz), name="readyz"),
    path("metrics", handler.read_only_view(metrics_view), name="metrics"),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", SwaggerView.as_view(), name="docs"),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the console's language switcher
    path("admin/console/", include("memories.console.urls")),
    path("admin/", admin.site.urls),
    path("v1/", include("memories.api.urls")),
    path("v1/", include("memories.longterm.api.urls")),
    path("v1/", include("diaries.urls")),
    path("v1/", include("tables.urls")),
    path("v1/", include("lorebooks.urls")),
    path("v1/", include("memories.compact.api.urls")),
    path("v1/", include("memories.state.api.urls")),
    path("v1/", include("memories.story.api.urls")),
    path("v1/", include("memories.history.api.urls")),
    path("v1/", include("memories.lifecycle.api.urls")),
    path("v1/", include("memories.webhooks.api.urls")),
    path("hinos/v1/", include("memories.hinos.api.urls")),
    path("mcp", mcp_server, name="mcp"),  # docs/mcp.md: JSON-RPC over Streamable HTTP, tool tokens only
]

handler400 = handler.json_400
handler403 = handler.json_403
handler404 = handler.json_404
handler500 = handler.json_500
