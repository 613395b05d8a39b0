"""Operator console for long-term memories, refused admissions, embedding indexes and task checkpoints.

Everything here is read-only except deleting a memory, which goes through the same service as the
API (history, vector backend, working-set invalidation). Memories are written only by the product,
which alone can give consent; an operator cannot invent one.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from memories.longterm.models import (
    AdmissionRefusal,
    EmbeddingIndex,
    LongTermMemory,
    LongTermMemoryVersion,
    Task,
    TaskCheckpoint,
    TaskReport,
)
from memories.longterm.services.memories import memory_delete
from memories.longterm.services.reindex import reindex_pending
from memoryhub.actors import Actor
from memoryhub.addresses import UserAddress
from memoryhub.admin_base import ReadOnlyAdmin, ReadOnlyTabularInline, pre
from memoryhub.errors import DomainError


class UserIdFilter(admin.SimpleListFilter):
    """The users present in the current list (bounded), so "this user's memories" is one click."""

    title = "user"
    parameter_name = "user_id"

    def lookups(self, request, model_admin):
        users = model_admin.get_queryset(request).order_by("user_id").values_list("user_id", flat=True).distinct()
        return [(user, user) for user in users[:50]]

    def queryset(self, request, queryset):
        return queryset.filter(user_id=self.value()) if self.value() else queryset


@admin.register(LongTermMemory)
class LongTermMemoryAdmin(ReadOnlyAdmin):
    list_display = ["memory_id", "user_id", "kind", "version", "summary", "product", "updated_at", "indexed_in"]
    list_filter = ["product", "kind", UserIdFilter]
    list_select_related = ["product", "embedding_index"]
    search_fields = ["user_id", "memory_id", "evidence"]
    fields = [
        "product",
        "user_id",
        "memory_id",
        "key",
        "kind",
        "version",
        "content_json",
        "evidence",
        "source",
        "embedding_index",
        "created_at",
        "updated_at",
        "history",
    ]
    readonly_fields = fields
    actions = ["delete_through_service"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding", "search_text")

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("memories.delete_longtermmemory")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a bulk SQL delete would skip history and the vector backend
        return actions

    @admin.display(description="content")
    def summary(self, obj) -> str:
        content = obj.content if isinstance(obj.content, dict) else {}
        return " · ".join(str(content[k]) for k in ("language", "detail", "text") if content.get(k))[:80]

    @admin.display(description="index")
    def indexed_in(self, obj) -> str:
        index = obj.embedding_index
        return f"{index.pk} ({index.status})" if index else "—"

    @admin.display(description="content")
    def content_json(self, obj) -> str:
        return pre(obj.content)

    @admin.display(description="version history")
    def history(self, obj) -> str:
        rows = LongTermMemoryVersion.objects.filter(product=obj.product, memory_id=obj.memory_id).order_by("-id")[:50]
        return format_html(
            "<table>{}</table>",
            format_html_join(
                "",
                "<tr><td>v{}</td><td>{}</td><td>{}:{}</td><td>{}</td><td>{}</td></tr>",
                ((r.version, r.action, r.actor_type, r.actor, r.created_at, pre(r.content)) for r in rows),
            ),
        )

    def delete_model(self, request, obj) -> None:
        memory_delete(
            scope=UserAddress(obj.product, obj.user_id),
            memory_id=obj.memory_id,
            actor=Actor.operator(request.user.get_username()),
        )

    @admin.action(description="Delete the selected memories (with history and vectors)", permissions=["delete"])
    def delete_through_service(self, request, queryset):
        deleted = 0
        for memory in queryset.select_related("product"):
            try:
                self.delete_model(request, memory)
                deleted += 1
            except DomainError as exc:
                self.message_user(request, f"{memory.memory_id} not deleted: {exc.message}", messages.ERROR)
        self.message_user(request, f"Deleted {deleted} memor{'y' if deleted == 1 else 'ies'}.")


@admin.register(LongTermMemoryVersion)
class LongTermMemoryVersionAdmin(ReadOnlyAdmin):
    list_display = [
        "memory_id",
        "version",
        "action",
        "user_id",
        "actor_type",
        "actor",
        "operation_id",
        "created_at",
        "product",
    ]
    list_filter = ["action", "product", "actor_type"]
    list_select_related = ["product"]
    search_fields = ["memory_id", "user_id", "operation_id"]


@admin.register(AdmissionRefusal)
class AdmissionRefusalAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "code", "reason", "user_id", "kind", "memory_id", "operation_id", "product"]
    list_filter = ["code", "kind", "product", UserIdFilter]
    list_select_related = ["product"]
    search_fields = ["user_id", "reason", "operation_id", "memory_id"]


@admin.register(EmbeddingIndex)
class EmbeddingIndexAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "status",
        "provider",
        "model",
        "dimension",
        "preprocessing",
        "backend",
        "storage_name",
        "records_indexed",
        "pending",
        "activated_at",
        "retired_at",
    ]
    list_filter = ["status", "backend"]
    ordering = ["-id"]

    @admin.display(description="records not in this index")
    def pending(self, obj) -> int:
        return reindex_pending(obj).count()


class TaskCheckpointInline(ReadOnlyTabularInline):
    model = TaskCheckpoint
    fields = ["stage", "data_json", "operation_id", "committed_at"]

    @admin.display(description="data")
    def data_json(self, obj) -> str:
        return pre(obj.data)


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = ["task_id", "user_id", "stage_count", "has_report", "created_at", "product"]
    list_filter = ["product", UserIdFilter]
    list_select_related = ["product"]
    search_fields = ["task_id", "user_id"]
    fields = ["product", "user_id", "task_id", "input_json", "report_json", "created_at"]
    readonly_fields = fields
    inlines = [TaskCheckpointInline]

    @admin.display(description="stages")
    def stage_count(self, obj) -> int:
        return obj.checkpoints.count()

    @admin.display(description="report", boolean=True)
    def has_report(self, obj) -> bool:
        return TaskReport.objects.filter(task=obj).exists()

    @admin.display(description="input snapshot")
    def input_json(self, obj) -> str:
        return pre(obj.input)

    @admin.display(description="report")
    def report_json(self, obj) -> str:
        report = TaskReport.objects.filter(task=obj).first()
        return format_html("{}<br>published {}", pre(report.report), report.published_at) if report else "—"
