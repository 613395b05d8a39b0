"""Operator console for conversation state: both projections, the revision history, compare-and-set edits."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.admin_base import ReadOnlyAdmin, VersionedEditAdmin, console_link

from .forms import StateForm
from .models import ConversationState, ConversationStateRevision
from .selectors import render_background, state_rules
from .services import state_replace
from .validation import MAX_TEXT_CHARS_LIMIT


def _address(obj: ConversationState) -> ConversationAddress:
    return ConversationAddress(obj.product, obj.user_id, obj.conversation_id)


def _pre(value: str) -> str:
    return format_html("<pre style='white-space:pre-wrap'>{}</pre>", value)


@admin.register(ConversationState)
class ConversationStateAdmin(VersionedEditAdmin):
    form = StateForm
    list_display = ["user_id", "conversation_id", "revision", "record_count", "product", "updated_at", "diff_link"]
    list_filter = ["product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id"]
    readonly_fields = [
        "product",
        "user_id",
        "conversation_id",
        "revision",
        "updated_at",
        "rules",
        "background",
        "history",
    ]
    fieldsets = [
        (None, {"fields": ["product", "user_id", "conversation_id", "revision", "updated_at", "rules", "background"]}),
        (
            "Edit (replaces text and records; refused if the state changed since you loaded it)",
            {"fields": ["text", "records", "loaded_revision"]},
        ),
        ("History (newest first)", {"fields": ["history"]}),
    ]

    @admin.display(description="revisions")
    def diff_link(self, obj: ConversationState) -> str:
        return console_link("state", obj.pk, "diff")

    @admin.display(description="records")
    def record_count(self, obj: ConversationState) -> int:
        return len(obj.records)

    @admin.display(description="an edit is checked against")
    def rules(self, obj: ConversationState) -> str:
        found = state_rules(_address(obj))
        if found is None:
            return (
                "no scenario (none named by a revision or a turn, or it declares no state section): only the "
                f"records' shape, values of at most 8 KiB and a text of at most {MAX_TEXT_CHARS_LIMIT} characters"
            )
        slug, config = found
        categories = ", ".join(f"{c.name} (at most {c.max_records} records)" for c in config.categories)
        return f"scenario {slug!r}: a text of at most {config.max_text_chars} characters; categories {categories}"

    @admin.display(description="background projection (what the diary summariser is given)")
    def background(self, obj: ConversationState) -> str:
        return _pre(render_background({"revision": obj.revision, "text": obj.text, "records": obj.records}) or "—")

    @admin.display(description="revisions")
    def history(self, obj: ConversationState) -> str:
        rows = ConversationStateRevision.objects.filter(state=obj).order_by("-revision")[:50]
        body = format_html_join(
            "",
            "<tr><td>r{}</td><td>{}</td><td>round {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    r.revision,
                    r.created_at,
                    r.round,
                    r.actor,
                    r.operation_id or "—",
                    _pre(json.dumps(r.changes, ensure_ascii=False)),
                    _pre(render_background({"revision": r.revision, "text": r.text, "records": r.records}) or "—"),
                )
                for r in rows
            ),
        )
        header = (
            "<tr><th>rev</th><th>at</th><th>round</th><th>by</th><th>operation</th><th>changes</th><th>state</th></tr>"
        )
        return format_html("<table>{}{}</table>", mark_safe(header), body)

    def save_versioned(self, request, obj, form, actor: Actor) -> None:
        state_replace(
            address=_address(ConversationState.objects.select_related("product").get(pk=obj.pk)),
            base_revision=form.cleaned_data["loaded_revision"],
            text=form.cleaned_data.get("text") or "",
            records=form.cleaned_data["records"],
            actor=actor,
        )


@admin.register(ConversationStateRevision)
class ConversationStateRevisionAdmin(ReadOnlyAdmin):
    list_display = ["state", "revision", "round", "actor", "operation_id", "created_at", "product"]
    list_filter = ["product"]
    list_select_related = ["product", "state"]
    search_fields = ["state__user_id", "state__conversation_id", "actor", "operation_id"]
