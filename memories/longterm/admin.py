"""Operator console for long-term memories, refused admissions, embedding indexes and task checkpoints.

Everything here is read-only except deleting a memory, which goes through the same service as the
API (history, vector backend, working-set invalidation), and memory kinds, which an operator may
define and change for a product through the same services as `/v1/memory-kinds`. Memories are
written only by the product, which alone can give consent; an operator cannot invent one.
Superseded memories stay listed (filter "current") with the id of the memory that replaced them.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from memories.longterm.kinds import DefinitionInvalid, check_definition, check_name
from memories.longterm.models import (
    AdmissionRefusal,
    EmbeddingIndex,
    LongTermMemory,
    LongTermMemoryVersion,
    MemoryKind,
    Task,
    TaskCheckpoint,
    TaskReport,
)
from memories.longterm.services.kinds import kind_create, kind_update
from memories.longterm.services.memories import memory_delete
from memories.longterm.services.reindex import reindex_pending
from memoryhub.actors import Actor
from memoryhub.addresses import UserAddress
from memoryhub.admin_base import (
    ReadOnlyAdmin,
    ReadOnlyTabularInline,
    StorableJSONAdmin,
    UserRowsAdmin,
    log_user_row_deletions,
    pre,
)
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


class CurrentFilter(admin.SimpleListFilter):
    """Current (what search and recall see), superseded or rolled back (history), or expired (awaiting the sweep)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [
            ("current", "current"),
            ("superseded", "superseded"),
            ("rolled_back", "rolled back"),
            ("expired", "expired"),
        ]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "current":
            return queryset.filter(superseded_by="", rolled_back_at__isnull=True).exclude(expires_at__lte=now)
        if self.value() == "rolled_back":
            return queryset.filter(rolled_back_at__isnull=False)
        if self.value() == "superseded":
            return queryset.exclude(superseded_by="")
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        return queryset


@admin.register(LongTermMemory)
class LongTermMemoryAdmin(UserRowsAdmin, ReadOnlyAdmin):
    list_display = [
        "memory_id",
        "user_id",
        "kind",
        "version",
        "summary",
        "product",
        "updated_at",
        "expires_at",
        "superseded_by",
        "indexed_in",
    ]
    list_filter = ["product", "kind", CurrentFilter, UserIdFilter]
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
        "expires_at",
        "superseded_by",
        "superseded_at",
        "turn",
        "rolled_back_at",
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
        if obj.kind == "preference":
            return " · ".join(str(content[k]) for k in ("language", "detail", "text") if content.get(k))[:80]
        return json.dumps(content, ensure_ascii=False, sort_keys=True)[:80]  # any kind: its content

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
                log_user_row_deletions(request.user, [memory], "Deleted through the service")
                deleted += 1
            except DomainError as exc:
                self.message_user(request, f"{memory.memory_id} not deleted: {exc.message}", messages.ERROR)
        self.message_user(request, f"Deleted {deleted} memor{'y' if deleted == 1 else 'ies'}.")


class MemoryKindForm(forms.ModelForm):
    """The same rules as the API: a valid JSON Schema of an object, and fields it names."""

    class Meta:
        model = MemoryKind
        fields = [
            "product",
            "name",
            "description",
            "content_schema",
            "stated_fields",
            "searchable",
            "text_field",
            "max_per_user",
            "default_ttl_days",
            "evidence_policy",
        ]

    def clean(self):
        data = super().clean()
        api = {
            "contentSchema": data.get("content_schema"),
            "statedFields": data.get("stated_fields") or [],
            "textField": data.get("text_field") or "",
            "maxPerUser": data.get("max_per_user"),
            "defaultTtlDays": data.get("default_ttl_days"),
        }
        if "evidence_policy" in data:  # absent when the select already refused it
            api["evidencePolicy"] = data["evidence_policy"]
        try:
            if self.instance.pk is None:
                check_name(data.get("name"))
            elif data.get("searchable") != self.instance.searchable:
                raise DefinitionInvalid("searchable", "is fixed when a kind is created")
            check_definition(api)
        except DefinitionInvalid as exc:
            field = {
                "name": "name",
                "searchable": "searchable",
                "statedFields": "stated_fields",
                "textField": "text_field",
                "evidencePolicy": "evidence_policy",
                "maxPerUser": "max_per_user",
                "defaultTtlDays": "default_ttl_days",
            }.get(exc.field, "content_schema")
            self.add_error(field, exc.message)
        return data


@admin.register(MemoryKind)
class MemoryKindAdmin(StorableJSONAdmin):
    """A product's memory kinds; saved through the kind services (so recall sees a change at once)."""

    form = MemoryKindForm
    list_display = [
        "name",
        "product",
        "searchable",
        "evidence_policy",
        "single_valued",
        "max_per_user",
        "default_ttl_days",
        "memories",
    ]
    list_filter = ["product", "searchable", "evidence_policy"]
    list_select_related = ["product"]
    search_fields = ["name", "description"]

    def get_readonly_fields(self, request, obj=None):
        return ["product", "name"] if obj is not None else []

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one at a time, and only when no memory uses the kind
        return actions

    def has_delete_permission(self, request, obj=None) -> bool:
        # A kind in use is deleted through `DELETE /v1/memory-kinds/{name}?cascade=true`, never by accident here.
        if obj is not None and LongTermMemory.objects.filter(product_id=obj.product_id, kind=obj.name).exists():
            return False
        return super().has_delete_permission(request, obj)

    @admin.display(description="single-valued fields")
    def single_valued(self, obj) -> str:
        return ", ".join(obj.single_valued_fields) or "—"

    @admin.display(description="memories")
    def memories(self, obj) -> int:
        return LongTermMemory.objects.filter(product_id=obj.product_id, kind=obj.name).count()

    def save_model(self, request, obj, form, change) -> None:
        data = {
            "description": obj.description,
            "contentSchema": obj.content_schema,
            "statedFields": obj.stated_fields or [],
            "searchable": obj.searchable,
            "textField": obj.text_field,
            "maxPerUser": obj.max_per_user,
            "defaultTtlDays": obj.default_ttl_days,
            "evidencePolicy": obj.evidence_policy,
        }
        if change:
            saved = kind_update(product=obj.product, name=obj.name, changes=data)
        else:
            saved = kind_create(product=obj.product, data={"name": obj.name, **data})
        obj.pk, obj.created_at, obj.updated_at = saved.pk, saved.created_at, saved.updated_at

    def delete_model(self, request, obj) -> None:
        from memories.longterm.services.kinds import kind_delete

        kind_delete(product=obj.product, name=obj.name, cascade=False)


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
    list_display = [
        "created_at",
        "code",
        "refusal_reason",
        "reason",
        "user_id",
        "kind",
        "memory_id",
        "operation_id",
        "product",
    ]
    list_filter = ["code", "kind", "product", UserIdFilter]
    list_select_related = ["product"]
    search_fields = ["user_id", "reason", "operation_id", "memory_id"]

    @admin.display(description="why (details.reason)")
    def refusal_reason(self, obj: AdmissionRefusal) -> str:
        """The named reason of a not_durable_preference refusal (hedge, one_off, …), else the code."""
        decision = obj.decision if isinstance(obj.decision, dict) else {}
        return str(decision.get("reason") or obj.code)


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
