"""PostgreSQL: a turn's large texts compressed with lz4 instead of pglz, where the server has lz4.

Every prepare writes the prompt, the recalled variables and the sources (several KB, compressed in the
row); lz4 compresses them several times faster than PostgreSQL's default pglz and decompresses them
faster for the console and the turn API (bench/turn.py, docs/performance.md). Values written before keep
pglz until rewritten; both are read transparently. A server built without lz4 keeps pglz.
"""

from django.db import migrations

COLUMNS = ("prompt", "variables", "sources", "assistant_message")


def _alter(schema_editor, method: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT %s = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'", [method])
        row = cursor.fetchone()
    if row and row[0]:
        changes = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION {method}" for column in COLUMNS)
        schema_editor.execute(f"ALTER TABLE memories_turn {changes}")


def forwards(apps, schema_editor):
    _alter(schema_editor, "lz4")


def backwards(apps, schema_editor):
    _alter(schema_editor, "pglz")


class Migration(migrations.Migration):
    dependencies = [("memories", "0013_turn_product_index_covered")]
    operations = [migrations.RunPython(forwards, backwards)]
