"""Compact history (mounted under /v1/ by memoryhub/urls.py)."""

from django.urls import path

from . import views

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/compactions", views.CompactionListView.as_view(), name="compactions"),
]
