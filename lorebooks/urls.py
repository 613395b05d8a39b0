"""URL patterns of the lorebooks API (mounted by memoryhub/urls.py under /v1/)."""

from __future__ import annotations

from django.urls import path

from . import api

book = "lorebooks/<str:lorebook_id>"

urlpatterns = [
    path("lorebooks", api.LorebookListView.as_view(), name="lorebooks"),
    path(book, api.LorebookDetailView.as_view(), name="lorebook"),
    path(f"{book}/export", api.LorebookExportView.as_view(), name="lorebook-export"),
    path(f"{book}/entries", api.EntryListView.as_view(), name="lorebook-entries"),
    path(f"{book}/entries/<str:uid>", api.EntryDetailView.as_view(), name="lorebook-entry"),
    path(f"{book}/entries/<str:uid>/versions", api.EntryVersionListView.as_view(), name="lorebook-entry-versions"),
    path(f"{book}/proposals", api.ProposalListView.as_view(), name="lorebook-proposals"),
    path(f"{book}/proposals/<id:proposal_id>", api.ProposalDetailView.as_view(), name="lorebook-proposal"),
    path(f"{book}/proposals/<id:proposal_id>/accept", api.ProposalAcceptView.as_view(), name="lorebook-accept"),
    path(f"{book}/proposals/<id:proposal_id>/reject", api.ProposalRejectView.as_view(), name="lorebook-reject"),
]
