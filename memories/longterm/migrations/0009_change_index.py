"""PostgreSQL: a held user's rows changed since a snapshot found in an index, not by reading every row.

`memoryhub_longterm_refresh` (migration 0008) looks for the rows of a held user changed since the snapshot it
read them in. Through `(product_id, user_id, id)` that read every row of the user from the heap — a memory
row is ~2.6 KB with its vector, about a page each: 40 buffers and ~0.1 ms for 100 memories, on every warm
hybrid search. On `(product_id, user_id, change_xid)` the range `change_xid >= xmin of that snapshot` holds
only what changed since (usually nothing): a few index pages. Built CONCURRENTLY, so that writes go on while
it builds; the migration therefore runs outside a transaction. SQLite needs nothing.
"""

from django.db import migrations


def _run(statement: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("longterm", "0008_resident_refresh")]

    operations = [
        migrations.RunPython(
            _run(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS longterm_change_idx "
                "ON memories_longtermmemory (product_id, user_id, change_xid)"
            ),
            _run("DROP INDEX CONCURRENTLY IF EXISTS longterm_change_idx"),
        )
    ]
