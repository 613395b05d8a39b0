"""Data lifecycle endpoints (mounted under /v1/ by memoryhub/urls.py)."""

from django.urls import path

from . import exports, imports, product, views

urlpatterns = [
    path("users/<str:user_id>", views.UserErasureView.as_view(), name="user-erase"),
    path(
        "users/<str:user_id>/conversations/<str:conversation_id>",
        views.ConversationErasureView.as_view(),
        name="conversation-erase",
    ),
    path("erasures/<str:erasure_id>", views.ErasureDetailView.as_view(), name="erasure"),
    path("product", product.ProductView.as_view(), name="product"),
    path("users/<str:user_id>/exports", exports.UserExportView.as_view(), name="user-exports"),
    path("exports/<str:export_id>", exports.ExportDetailView.as_view(), name="export"),
    path("users/<str:user_id>/imports", imports.UserImportView.as_view(), name="user-imports"),
    path("imports/<str:import_id>", imports.ImportDetailView.as_view(), name="import"),
    path("exports/<str:export_id>/download", exports.ExportDownloadView.as_view(), name="export-download"),
]
