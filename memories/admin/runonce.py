"""Operator console for the run-once store: Idempotency-Key and operationId records (read-only)."""

from __future__ import annotations

from django.contrib import admin

from memories.models import RunOnceRecord
from memoryhub.admin_base import ReadOnlyAdmin, pre


@admin.register(RunOnceRecord)
class RunOnceRecordAdmin(ReadOnlyAdmin):
    list_display = ["key", "kind", "action", "user_id", "created_at", "product"]
    list_filter = ["kind", "action", "product"]
    list_select_related = ["product"]
    search_fields = ["key", "user_id"]
    fields = ["product", "kind", "key", "action", "user_id", "fingerprint", "result_json", "created_at"]
    readonly_fields = fields

    @admin.display(description="stored result")
    def result_json(self, obj) -> str:
        return pre(obj.result)
