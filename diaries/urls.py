"""URL patterns of this module (mounted under /v1/ by memoryhub/urls.py)."""

from __future__ import annotations

from django.urls import path

from .api import DiaryListView

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/diaries", DiaryListView.as_view(), name="diaries"),
]
