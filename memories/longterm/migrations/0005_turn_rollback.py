"""Long-term memories record their turn; a superseded turn's memories are rolled back (docs/roleplay.md).

PostgreSQL: the exact-search function (0003) answers the two new columns and leaves rolled-back memories out.
"""

import importlib

import django.db.models.deletion
from django.db import migrations, models

_0003 = importlib.import_module("memories.longterm.migrations.0003_search_exact_function")
_OLD = _0003.CREATE[_0003.CREATE.index("CREATE OR REPLACE FUNCTION") :]
_EDITS = [  # (text of 0003, text now, how many times): the two new columns, in the model's field order
    (
        "superseded_at timestamptz, created_at",
        "superseded_at timestamptz, turn_id bigint, rolled_back_at timestamptz,\n    created_at",
        1,
    ),
    (
        "NULL::timestamptz, NULL::timestamptz;",
        "NULL::bigint, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz;",
        2,
    ),
    (
        "m.superseded_by::text, m.superseded_at, m.created_at",
        "m.superseded_by::text, m.superseded_at, m.turn_id, m.rolled_back_at, m.created_at",
        1,
    ),
    ("AND t.superseded_by = '' AND", "AND t.superseded_by = '' AND t.rolled_back_at IS NULL AND", 1),
]
_DROP = "DROP FUNCTION IF EXISTS memoryhub_search_exact(bigint, text, text, text, text, text[], vector, timestamptz, integer, integer, integer);"


def _new() -> str:
    sql = _OLD
    for before, after, count in _EDITS:
        assert sql.count(before) == count, before
        sql = sql.replace(before, after)
    return sql


def exclude_rolled_back(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_DROP + _new())  # a new result type: replaced by drop and create


def include_rolled_back(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_DROP + _OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("longterm", "0004_sqlite_fts5_keyword"),
        ("memories", "0020_message_witness"),
    ]

    operations = [
        migrations.AddField(
            model_name="longtermmemory",
            name="rolled_back_at",
            field=models.DateTimeField(
                blank=True,
                help_text="Its turn was superseded: kept as history, gone from search, recall, lists.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="longtermmemory",
            name="turn",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="memories.turn",
            ),
        ),
        migrations.AddField(
            model_name="longtermmemoryversion",
            name="turn",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="memories.turn",
            ),
        ),
        migrations.AlterField(
            model_name="longtermmemoryversion",
            name="action",
            field=models.CharField(
                choices=[
                    ("created", "created"),
                    ("updated", "updated"),
                    ("superseded", "superseded"),
                    ("deleted", "deleted"),
                    ("rolled_back", "rolled back"),
                    ("reapplied", "reapplied"),
                    ("restored", "restored"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddIndex(
            model_name="longtermmemory",
            index=models.Index(condition=models.Q(("turn__isnull", False)), fields=["turn"], name="longterm_turn_idx"),
        ),
        migrations.AddField(
            model_name="longtermmemoryversion",
            name="superseded_by",
            field=models.CharField(
                blank=True,
                help_text="superseded / restored: the memory that superseded it (or no more).",
                max_length=40,
            ),
        ),
        migrations.RunPython(exclude_rolled_back, include_rolled_back),
    ]
