from __future__ import annotations

from django.contrib import admin

from .models import OutboxMessage


@admin.register(OutboxMessage)
class OutboxMessageAdmin(admin.ModelAdmin):
    """Read-only: rows are written by requests and acknowledged by workers; the relay re-sends pending ones."""

    list_display = ("id", "task", "dedup_key", "created_at", "attempts", "next_attempt_at", "done_at", "outcome")
    list_filter = ("task", "outcome")
    search_fields = ("dedup_key",)
    readonly_fields = [f.name for f in OutboxMessage._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
