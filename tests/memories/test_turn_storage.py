"""How a turn is stored on PostgreSQL: what every prepare's INSERT has to maintain (docs/performance.md, Turns)."""

from __future__ import annotations

import pytest
from django.db import connection

from memories.models import Turn

pytestmark = [pytest.mark.django_db, pytest.mark.requires_postgres]

TABLE = Turn._meta.db_table


def query(sql: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_the_turn_table_keeps_no_index_that_another_one_covers():
    indexes = dict(query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [TABLE]))
    alone_on_product = [name for name, definition in indexes.items() if definition.endswith("(product_id)")]
    assert alone_on_product == [] and "varchar_pattern_ops" not in " ".join(indexes.values())
    assert indexes["turn_conversation_idx"].endswith("(product_id, user_id, conversation_id, id DESC)")


def test_a_turns_large_texts_are_compressed_with_lz4_where_the_server_has_it():
    (has_lz4,) = query("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")[0]
    methods = dict(
        query(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname IN ('prompt', 'variables', 'sources', 'assistant_message')",
            [TABLE],
        )
    )
    assert methods == dict.fromkeys(("prompt", "variables", "sources", "assistant_message"), "l" if has_lz4 else "")
