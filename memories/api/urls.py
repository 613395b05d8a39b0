from django.urls import path

from . import views_documents

conversation = "users/<str:user_id>/conversations/<str:conversation_id>"

urlpatterns = [
    path(f"{conversation}/memory", views_documents.MemoryDocumentView.as_view(), name="memory"),
    path(f"{conversation}/memory/revisions", views_documents.MemoryRevisionListView.as_view(), name="memory-revisions"),
]
