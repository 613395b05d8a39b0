"""The Hinos protocol server, mounted by memoryhub/urls.py at /hinos/v1/."""

from django.urls import path

from .views import HinosCommitView, HinosPrepareView

urlpatterns = [
    path("memory/prepare", HinosPrepareView.as_view(), name="hinos-prepare"),
    path("memory/commit", HinosCommitView.as_view(), name="hinos-commit"),
]
