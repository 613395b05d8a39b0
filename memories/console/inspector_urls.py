"""The turn inspector, conversation timeline and artefact pages under /admin/console/ (admin login + staff)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from memories.console import inspector_views as views

urlpatterns = [
    path("turns/<id:pk>/", admin.site.admin_view(views.turn_inspector), name="turn-inspector"),
    path(
        "conversations/<id:pk>/timeline/",
        admin.site.admin_view(views.conversation_timeline),
        name="conversation-timeline",
    ),
    # Every readable artefact (table, document, state, story, diary entry): one table-driven view.
    path("<slug:kind>/<id:pk>/", admin.site.admin_view(views.artefact_page), name="artefact"),
]
