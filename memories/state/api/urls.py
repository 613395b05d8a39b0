"""Conversation state (mounted under /v1/ by memoryhub/urls.py)."""

from django.urls import path

from . import views

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/state", views.StateView.as_view(), name="state"),
    path(f"{conversation}/state/candidates", views.StateCandidateView.as_view(), name="state-candidates"),
    path(f"{conversation}/state/revisions", views.StateRevisionListView.as_view(), name="state-revisions"),
]
