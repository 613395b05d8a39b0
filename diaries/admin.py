"""Operator console for diaries: per conversation, its entries and every plan decision with its reason."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from memoryhub.admin_base import ReadOnlyAdmin, console_link
from memoryhub.clients.errors import UpstreamError

from .models import DiaryEntry, DiaryPlanRecord, DiaryState
from .selectors import diary_plan_records
from .services import diary_replan_conversation
from .summarizers import SummarizerConfigError

ROWS_SHOWN = 50


@admin.register(DiaryState)
class DiaryStateAdmin(ReadOnlyAdmin):
    list_display = ["user_id", "conversation_id", "product", "rounds", "last_diary_round", "updated_at"]
    list_filter = ["product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id"]
    readonly_fields = [
        "product",
        "user_id",
        "conversation_id",
        "rounds",
        "last_diary_round",
        "updated_at",
        "entries",
        "plan_decisions",
    ]
    fields = readonly_fields
    actions = ["replan"]

    def has_replan_permission(self, request) -> bool:
        # Re-planning writes (plan records, maybe an entry): operators who may change diary state.
        return request.user.has_perm("diaries.change_diarystate")

    @admin.display(description="Diary entries (newest first)")
    def entries(self, obj: DiaryState) -> str:
        rows = DiaryEntry.objects.filter(
            product=obj.product, user_id=obj.user_id, conversation_id=obj.conversation_id
        ).order_by("-id")[:ROWS_SHOWN]
        return _table(
            ["rounds", "kind", "summariser", "created", "summary", "diary"],
            (
                (f"{e.round_from}–{e.round_to}", e.kind, e.summarizer, e.created_at, e.summary, e.body or "—")
                for e in rows
            ),
        )

    @admin.display(description="Plan decisions (newest first)")
    def plan_decisions(self, obj: DiaryState) -> str:
        rows = diary_plan_records(
            product=obj.product, user_id=obj.user_id, conversation_id=obj.conversation_id, limit=ROWS_SHOWN
        )
        return _table(
            ["round", "category", "decision", "outcome", "reason", "trigger", "turn", "when"],
            (
                (
                    r.round,
                    r.subscription_category,
                    r.decision,
                    r.outcome,
                    r.reason,
                    r.trigger,
                    r.turn_id or "—",
                    r.created_at,
                )
                for r in rows
            ),
        )

    @admin.action(
        description="Re-plan the diary of the selected conversations (appends, never edits)",
        permissions=["replan"],
    )
    def replan(self, request, queryset):
        counts: dict[str, int] = {}
        for state in queryset.select_related("product"):
            try:
                outcome = diary_replan_conversation(state=state).outcome
            except (UpstreamError, SummarizerConfigError) as exc:
                outcome = "failed"
                self.message_user(request, f"{state}: generation failed: {exc}", messages.ERROR)
            self.log_change(request, state, f"Re-planned the diary: {outcome}")
            counts[outcome] = counts.get(outcome, 0) + 1
        summary = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
        self.message_user(request, f"Re-planned {sum(counts.values())} conversation(s): {summary}.")


def _table(headers: list[str], rows) -> str:
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        (
            (format_html_join("", "<td style='white-space:pre-wrap'>{}</td>", ((cell,) for cell in row)),)
            for row in rows
        ),
    )
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


@admin.register(DiaryEntry)
class DiaryEntryAdmin(ReadOnlyAdmin):
    list_display = [
        "user_id",
        "conversation_id",
        "round_from",
        "round_to",
        "kind",
        "summarizer",
        "subscription_category",
        "created_at",
        "product",
        "text_link",
    ]
    list_filter = ["kind", "summarizer", "subscription_category", "product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "summary"]
    raw_id_fields = ["turn"]

    @admin.display(description="text")
    def text_link(self, obj: DiaryEntry) -> str:
        return console_link("diaries", obj.pk, "read")


@admin.register(DiaryPlanRecord)
class DiaryPlanRecordAdmin(ReadOnlyAdmin):
    list_display = [
        "user_id",
        "conversation_id",
        "round",
        "decision",
        "outcome",
        "reason",
        "subscription_category",
        "trigger",
        "created_at",
        "product",
    ]
    list_filter = ["decision", "outcome", "trigger", "subscription_category", "product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "reason"]
    raw_id_fields = ["turn", "entry"]
