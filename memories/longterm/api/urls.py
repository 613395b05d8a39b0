"""Long-term memories, search and task checkpoints (mounted under /v1/ by memoryhub/urls.py)."""

from django.urls import path

from . import views

user = "users/<str:user_id>"

urlpatterns = [
    path("memory-kinds", views.KindListView.as_view(), name="memory-kinds"),
    path("memory-kinds/<str:name>", views.KindDetailView.as_view(), name="memory-kind-detail"),
    path(f"{user}/memories", views.MemoryListView.as_view(), name="memories"),
    path(f"{user}/memories/search", views.MemorySearchView.as_view(), name="memories-search"),
    path(f"{user}/memories/<str:memory_id>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path(f"{user}/tasks/<str:task_id>", views.TaskView.as_view(), name="task"),
    path(f"{user}/tasks/<str:task_id>/checkpoints/<str:stage>", views.CheckpointView.as_view(), name="task-checkpoint"),
    path(f"{user}/tasks/<str:task_id>/report", views.ReportView.as_view(), name="task-report"),
]
