"""Operator console for compact history: every compaction with what it covers, its summary, and its fate."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from memoryhub.admin_base import ReadOnlyAdmin, pre
from memoryhub.wording import count

from .models import Compaction


@admin.register(Compaction)
class CompactionAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "user_id",
        "conversation_id",
        "product",
        "version",
        "covers",
        "trigger",
        "summarizer",
        "invalidated",
        "created_at",
    ]
    list_filter = ["product", "trigger", "invalidated"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "summary"]
    readonly_fields = [
        "product",
        "user_id",
        "conversation_id",
        "version",
        "previous",
        "covers",
        "trigger",
        "turn_link",
        "summarizer",
        "budget_chars",
        "history_chars",
        "summary_text",
        "invalidated",
        "invalidated_at",
        "invalidated_by_turn",
        "created_at",
    ]
    fields = readonly_fields

    @admin.display(description="Covers")
    def covers(self, obj: Compaction) -> str:
        return (
            f"messages {obj.from_message_id}–{obj.through_message_id} "
            f"(rounds {obj.from_round}–{obj.through_round}, {count(obj.message_count, 'message')})"
        )

    @admin.display(description="Summary")
    def summary_text(self, obj: Compaction) -> str:
        return pre(obj.summary)

    @admin.display(description="Scheduled by turn")
    def turn_link(self, obj: Compaction) -> str:
        if obj.turn_id is None:
            return "— (compacted inline by a prepare)"
        return format_html(
            '<a href="{}">turn {}</a>', reverse("admin:memories_turn_change", args=[obj.turn_id]), obj.turn_id
        )
