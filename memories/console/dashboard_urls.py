"""The dashboard and the operator actions (docs/console.md), under /admin/console/, behind the admin login."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path
from django.views.decorators.http import require_http_methods

from memories.console import views

get_or_post = require_http_methods(["GET", "POST"])

urlpatterns = [
    path("", admin.site.admin_view(views.dashboard), name="dashboard"),
    path(
        "actions/rerun/<id:turn_pk>/<str:work>/",
        admin.site.admin_view(get_or_post(views.rerun)),
        name="rerun",
    ),
    path("actions/resend/<id:event_pk>/", admin.site.admin_view(get_or_post(views.resend)), name="resend"),
    path("actions/revoke-key/<id:key_pk>/", admin.site.admin_view(get_or_post(views.revoke_key)), name="revoke_key"),
]
