"""Operator console for memory tables: rendered tables per conversation, history, and each turn's edits."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.admin_base import ReadOnlyAdmin, VersionedEditAdmin, console_link
from tables.forms import MemoryTableForm
from tables.models import MemoryTable, MemoryTableVersion, TableEditRecord
from tables.selectors import table_edit_records, tables_list
from tables.services import table_edit_manually


def html_table(columns: list[str], rows: list[list[str]]) -> str:
    """Rows as an HTML table whose first column is the rowIndex the model uses."""
    header = format_html_join("", "<th>{}</th>", ((f"{i}:{name}",) for i, name in enumerate(columns)))
    body = format_html_join(
        "",
        "<tr><td>{}</td>{}</tr>",
        ((index, format_html_join("", "<td>{}</td>", ((cell,) for cell in row))) for index, row in enumerate(rows)),
    )
    if not rows:
        body = format_html("<tr><td colspan='{}'>（此表格当前为空）</td></tr>", len(columns) + 1)
    return format_html("<table><thead><tr><th>rowIndex</th>{}</tr></thead><tbody>{}</tbody></table>", header, body)


def html_calls(entries: list[dict]) -> str:
    if not entries:
        return "—"
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
        (
            (
                e.get("op", ""),
                e.get("tableName", e.get("tableIndex", "")),
                e.get("rowIndex", ""),
                e.get("source", ""),
                e.get("reason", e.get("values", "")),
            )
            for e in entries
        ),
    )
    return format_html(
        "<table><tr><th>op</th><th>table</th><th>row</th><th>call</th><th>values / reason</th></tr>{}</table>", rows
    )


def _address(table: MemoryTable) -> ConversationAddress:
    return ConversationAddress(table.product, table.user_id, table.conversation_id)


@admin.register(MemoryTable)
class MemoryTableAdmin(VersionedEditAdmin):
    form = MemoryTableForm
    list_display = [
        "name",
        "user_id",
        "conversation_id",
        "position",
        "version",
        "row_count",
        "product",
        "updated_at",
        "diff_link",
    ]
    list_filter = ["product", "name"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "name"]
    ordering = ["product", "user_id", "conversation_id", "position"]
    readonly_fields = [
        "product",
        "user_id",
        "conversation_id",
        "name",
        "position",
        "version",
        "updated_at",
        "rendered",
        "conversation_tables",
        "history",
        "turn_edits",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "product",
                    "user_id",
                    "conversation_id",
                    "name",
                    "position",
                    "version",
                    "updated_at",
                    "rendered",
                ]
            },
        ),
        (
            "Edit (replaces all rows; refused if the table changed since you loaded it)",
            {"fields": ["rows", "loaded_version"]},
        ),
        ("This conversation", {"fields": ["conversation_tables", "turn_edits", "history"]}),
    ]

    @admin.display(description="versions")
    def diff_link(self, obj: MemoryTable) -> str:
        return console_link("tables", obj.pk, "diff")

    @admin.display(description="rows")
    def row_count(self, obj: MemoryTable) -> int:
        return len(obj.rows)

    @admin.display(description="table")
    def rendered(self, obj: MemoryTable) -> str:
        return html_table(obj.columns, obj.rows)

    @admin.display(description="all tables of this conversation")
    def conversation_tables(self, obj: MemoryTable) -> str:
        return format_html_join(
            "",
            "<h4>* {}:{} (v{})</h4>{}",
            ((i, t.name, t.version, html_table(t.columns, t.rows)) for i, t in enumerate(tables_list(_address(obj)))),
        )

    @admin.display(description="version history of this table")
    def history(self, obj: MemoryTable) -> str:
        versions = MemoryTableVersion.objects.filter(table=obj).order_by("-version")[:50]
        return format_html_join(
            "",
            "<h4>v{} · {} {} {} · {}</h4>{}",
            (
                (
                    v.version,
                    v.cause,
                    v.actor,
                    f"turn {v.turn_id}" if v.turn_id else "",
                    v.created_at,
                    html_table(obj.columns, v.rows),
                )
                for v in versions
            ),
        )

    @admin.display(description="edits of the conversation's turns (newest first)")
    def turn_edits(self, obj: MemoryTable) -> str:
        return format_html_join(
            "",
            "<h4>turn {} · round {} · {} · {} attempt(s)</h4><p>applied:</p>{}<p>skipped:</p>{}",
            (
                (r.turn_id, r.round, r.outcome, r.attempts, html_calls(r.applied), html_calls(r.skipped))
                for r in table_edit_records(_address(obj))
            ),
        )

    def save_versioned(self, request, obj, form, actor: Actor) -> None:
        table_edit_manually(
            table=MemoryTable.objects.get(pk=obj.pk),
            expected_version=form.cleaned_data["loaded_version"],
            rows=form.cleaned_data["rows"],
            actor=actor,
        )


@admin.register(TableEditRecord)
class TableEditRecordAdmin(ReadOnlyAdmin):
    list_display = [
        "turn",
        "user_id",
        "conversation_id",
        "round",
        "outcome",
        "attempts",
        "unclosed_block",
        "after_step_status",
        "created_at",
        "product",
    ]
    list_filter = ["outcome", "unclosed_block", "product"]
    list_select_related = ["product", "turn"]
    search_fields = ["user_id", "conversation_id", "turn__id"]
    fields = [
        "product",
        "user_id",
        "conversation_id",
        "turn",
        "round",
        "outcome",
        "attempts",
        "unclosed_block",
        "base_versions",
        "result_versions",
        "tables",
        "applied_calls",
        "skipped_calls",
        "after_step",
        "created_at",
    ]
    readonly_fields = fields

    @admin.display(description="after-step")
    def after_step_status(self, obj: TableEditRecord) -> str:
        return obj.after_step.get("status", "—")

    @admin.display(description="applied calls")
    def applied_calls(self, obj: TableEditRecord) -> str:
        return html_calls(obj.applied)

    @admin.display(description="skipped calls (with reasons)")
    def skipped_calls(self, obj: TableEditRecord) -> str:
        return html_calls(obj.skipped)


@admin.register(MemoryTableVersion)
class MemoryTableVersionAdmin(ReadOnlyAdmin):
    list_display = ["table", "version", "cause", "actor", "turn", "created_at", "product"]
    list_filter = ["cause", "product"]
    list_select_related = ["product", "table"]
    search_fields = ["table__user_id", "table__conversation_id", "table__name", "actor"]
