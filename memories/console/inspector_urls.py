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
    path("tables/<id:pk>/", admin.site.admin_view(views.table_diff), name="table-diff"),
    path("documents/<id:pk>/", admin.site.admin_view(views.document_diff), name="document-diff"),
    path("state/<id:pk>/", admin.site.admin_view(views.state_diff), name="state-diff"),
    path("story/<id:pk>/", admin.site.admin_view(views.story_diff), name="story-diff"),
    path("diaries/<id:pk>/", admin.site.admin_view(views.diary_entry), name="diary-entry"),
]
