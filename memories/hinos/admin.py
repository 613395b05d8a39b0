"""Operator console for Hinos: failed commits (with a re-send action) and the server's claims."""

from __future__ import annotations

from django.contrib import admin, messages

from memories.forms import pretty_json
from memories.hinos.admin_filters import ResendStateFilter
from memories.hinos.models import FailedHinosCommit, HinosClaim
from memories.hinos.runtime import commit_acknowledged
from memories.hinos.services.commits import RESEND_PERMISSION, hinos_commit_resend_audited
from memoryhub.admin_base import ReadOnlyAdmin


@admin.register(FailedHinosCommit)
class FailedHinosCommitAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "product", "user_id", "conversation_id", "turn", "claim_id", "reason", "resolved"]
    list_filter = ["product", "created_at", ResendStateFilter]
    list_select_related = ["product", "turn"]
    search_fields = ["user_id", "conversation_id", "details__claim_id"]
    readonly_fields = ["product", "user_id", "conversation_id", "turn", "type", "details_pretty", "created_at"]
    fields = readonly_fields
    actions = ["resend_commit"]
    ordering = ["-id"]

    @admin.display(description="claim id")
    def claim_id(self, event: FailedHinosCommit) -> str:
        return event.details.get("claim_id") or "—"

    @admin.display(description="reason")
    def reason(self, event: FailedHinosCommit) -> str:
        return event.details.get("reason") or "—"

    @admin.display(description="acknowledged since", boolean=True)
    def resolved(self, event: FailedHinosCommit) -> bool:
        return bool(event.turn and commit_acknowledged(event.turn))

    @admin.display(description="details")
    def details_pretty(self, event: FailedHinosCommit) -> str:
        return pretty_json(event.details)

    def has_resend_permission(self, request) -> bool:
        # Re-sending posts the turn's commit to Hinos again and records its receipt: view is not enough.
        return request.user.has_perm(RESEND_PERMISSION)

    @admin.action(description="Re-send the Hinos commit (same claim id)", permissions=["resend"])
    def resend_commit(self, request, queryset):
        events = queryset.select_related("turn")
        outcomes = [hinos_commit_resend_audited(event=event, user=request.user) for event in events]
        counts = {
            status: sum(1 for o in outcomes if o.status == status)
            for status in ("committed", "already_committed", "failed", "not_resendable")
        }
        summary = ", ".join(f"{count} {status.replace('_', ' ')}" for status, count in counts.items() if count)
        level = messages.WARNING if counts["failed"] or counts["not_resendable"] else messages.SUCCESS
        self.message_user(request, f"Re-sent {len(outcomes)} commit(s): {summary}.", level)
        for outcome in outcomes:
            if outcome.status in ("failed", "not_resendable"):
                self.message_user(request, outcome.message, messages.WARNING)


@admin.register(HinosClaim)
class HinosClaimAdmin(ReadOnlyAdmin):
    list_display = [
        "claim_id",
        "product",
        "user_id",
        "conversation_id",
        "scenario_slug",
        "turn",
        "state_through_round",
        "status",
        "created_at",
        "committed_at",
        "reflected_at",
    ]
    list_filter = ["status", "product"]
    list_select_related = ["product"]
    search_fields = ["claim_id", "user_id", "conversation_id", "request_id"]
    raw_id_fields = ["committed_turn", "conversation_row", "scenario"]
    ordering = ["-id"]

    def get_readonly_fields(self, request, obj=None) -> list[str]:
        return [field.name for field in HinosClaim._meta.fields]
