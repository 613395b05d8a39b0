"""URL patterns of this module (mounted by memoryhub/urls.py under /v1/)."""

from __future__ import annotations

from django.urls import path

from . import api

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/tables", api.TableListView.as_view(), name="tables"),
    path(f"{conversation}/tables/<id:table_id>", api.TableDetailView.as_view(), name="table"),
    path(f"{conversation}/tables/<id:table_id>/versions", api.TableVersionListView.as_view(), name="table-versions"),
]
