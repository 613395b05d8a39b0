"""Story snapshots (mounted under /v1/ by memoryhub/urls.py)."""

from django.urls import path

from . import views

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/story", views.StoryView.as_view(), name="story"),
    path(f"{conversation}/story/versions", views.StoryVersionListView.as_view(), name="story-versions"),
    path(f"{conversation}/story/settlements", views.StorySettlementView.as_view(), name="story-settlements"),
]
