"""Reads of memory tables. Every selector is scoped by the address's product: a foreign id is simply not found."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet

from memoryhub.addresses import ConversationAddress
from memoryhub.db_routing import primary_reads
from memoryhub.errors import NotFound
from memoryhub.pagination import keyset_page
from tables.models import MemoryTable, MemoryTableVersion, TableEditRecord


def conversation_tables(address: ConversationAddress) -> QuerySet[MemoryTable]:
    return MemoryTable.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )


@primary_reads  # versions the client sends back as expectedVersion: never a lagging replica's
def tables_list(address: ConversationAddress) -> list[MemoryTable]:
    """The conversation's tables in index order ([] for a conversation that never used tables)."""
    return list(conversation_tables(address).order_by("position", "pk"))


@primary_reads
def table_get(address: ConversationAddress, table_id: int) -> MemoryTable:
    table = conversation_tables(address).select_related("product").filter(pk=table_id).first()
    if table is None:
        raise NotFound(f"no table {table_id} in this conversation")
    return table


def table_versions_page(table: MemoryTable, *, cursor: str | None, limit: int) -> tuple[list, str | None]:
    rows = MemoryTableVersion.objects.filter(product=table.product, table=table)
    return keyset_page(rows, field="version", descending=True, cursor=cursor, limit=limit)


def table_rows_at(table: MemoryTable, version: int) -> list:
    """The rows a table had at `version` (its current rows when that is the current version)."""
    if version == table.version:
        return table.rows
    rows = MemoryTableVersion.objects.filter(table=table, version=version).values_list("rows", flat=True).first()
    return table.rows if rows is None else rows


def tables_snapshot(address: ConversationAddress) -> list[dict[str, Any]]:
    """Plain data of every table of the conversation: what the working set caches for `memoryTable`."""
    return [
        {
            "id": t.pk,
            "name": t.name,
            "position": t.position,
            "columns": t.columns,
            "note": t.note,
            "rules": t.rules,
            "required": t.required,
            "maxRows": t.max_rows,
            "rows": t.rows,
            "version": t.version,
        }
        for t in tables_list(address)
    ]


def round_base_record(
    address: ConversationAddress, round_number: int, *, also_turns: Iterable[int] = (), exclude_turn: int | None = None
) -> TableEditRecord | None:
    """The first applied record of a round: its base versions are the tables as they were before the round.

    A regenerated or replaced reply belongs to the round of the reply it replaces, so every reply of a
    round is applied to (and prompted with) the same tables, and none keeps a predecessor's edits.
    """
    records = TableEditRecord.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    ).filter(Q(round=round_number) | Q(turn_id__in=list(also_turns)))
    if exclude_turn is not None:
        records = records.exclude(turn_id=exclude_turn)
    return records.exclude(outcome="superseded").order_by("pk").first()


def table_edit_records(address: ConversationAddress, *, limit: int = 50) -> list[TableEditRecord]:
    """The newest records of the conversation (for the admin)."""
    return list(
        TableEditRecord.objects.filter(
            product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        .select_related("turn")
        .order_by("-pk")[:limit]
    )
