"""Operator console for story snapshots: the current snapshot, the `story` text and every version."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memoryhub.admin_base import ReadOnlyAdmin, console_link

from .models import StorySnapshot, StoryVersion
from .selectors import render_story, snapshot_to_dict


def _pre(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
    return format_html("<pre style='white-space:pre-wrap'>{}</pre>", text)


@admin.register(StorySnapshot)
class StorySnapshotAdmin(admin.ModelAdmin):
    """Read-only: a story changes only by settlements (the API) and rollbacks (regenerated replies)."""

    list_display = [
        "user_id",
        "conversation_id",
        "version",
        "anchor_message_id",
        "event_count",
        "product",
        "updated_at",
        "diff_link",
    ]
    list_filter = ["product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id"]
    fields = [
        "product",
        "user_id",
        "conversation_id",
        "version",
        "anchor_message_id",
        "updated_at",
        "rendered",
        "facts",
        "narrative_state",
        "history",
    ]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # the change page is the read-only view page

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="versions")
    def diff_link(self, obj: StorySnapshot) -> str:
        return console_link("story", obj.pk, "diff")

    @admin.display(description="events")
    def event_count(self, obj: StorySnapshot) -> int:
        return len(obj.events)

    @admin.display(description="the `story` variable")
    def rendered(self, obj: StorySnapshot) -> str:
        return _pre(render_story(snapshot_to_dict(obj)) or "—")

    @admin.display(description="world facts")
    def facts(self, obj: StorySnapshot) -> str:
        return _pre(obj.world_facts)

    @admin.display(description="narrative")
    def narrative_state(self, obj: StorySnapshot) -> str:
        return _pre(obj.narrative)

    @admin.display(description="versions (newest first)")
    def history(self, obj: StorySnapshot) -> str:
        rows = StoryVersion.objects.filter(snapshot=obj).order_by("-version")[:50]
        body = format_html_join(
            "",
            "<tr><td>v{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    v.version,
                    v.cause + (f" (restored v{v.restored_from})" if v.cause == "rollback" else ""),
                    "rolled back" if v.rolled_back else "live",
                    v.anchor_message_id or "—",
                    v.actor,
                    v.created_at,
                    _pre(v.changes),
                    _pre(render_story(snapshot_to_dict(v)) or "—"),
                )
                for v in rows
            ),
        )
        header = (
            "<tr><th>version</th><th>cause</th><th>state</th><th>anchor</th><th>by</th><th>at</th>"
            "<th>changes</th><th>story</th></tr>"
        )
        return format_html("<table>{}{}</table>", mark_safe(header), body)


@admin.register(StoryVersion)
class StoryVersionAdmin(ReadOnlyAdmin):
    list_display = ["snapshot", "version", "cause", "rolled_back", "anchor_message_id", "actor", "created_at"]
    list_filter = ["cause", "rolled_back", "product"]
    list_select_related = ["product", "snapshot"]
    search_fields = ["snapshot__user_id", "snapshot__conversation_id", "actor", "operation_id"]
