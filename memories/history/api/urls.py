"""History search and message import (mounted under /v1/ by memoryhub/urls.py)."""

from django.urls import path

from . import views

user = "users/<str:user_id>"

urlpatterns = [
    path(f"{user}/history", views.HistoryStatusView.as_view(), name="history-status"),
    path(f"{user}/history/search", views.HistorySearchView.as_view(), name="history-search"),
    path(
        f"{user}/conversations/<str:conversation_id>/messages/import",
        views.MessageImportView.as_view(),
        name="messages-import",
    ),
]
