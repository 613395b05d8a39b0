"""SQLite: a change counter per (product, user) of the history vectors, kept by triggers.

The SQLite semantic search keeps each user's decoded vectors in a per-process cache (memories/history/
vector_cache.py) and reads this counter in the same statement as the rows it ranks: any re-embedding or
deletion of a user's message, by whatever code, bumps it and the cache is decoded again. New rows need no
bump (their ids are not cached yet; Django's SQLite ids are AUTOINCREMENT, never reused). PostgreSQL
searches through pgvector and needs none of it.

With it, an index that covers the semantic statement's id selection: SQLite stores a row's columns in
order, and the filter columns after the ~8 KB vector text (embedding_index_id, message_id, product_id)
cost a walk through the row's overflow pages — at 5,000 messages about 40 ms of every search.
"""

from django.db import migrations

BUMP = (
    "INSERT INTO history_vector_epoch (product_id, user_id, epoch) VALUES ({row}.product_id, {row}.user_id, 1) "
    "ON CONFLICT (product_id, user_id) DO UPDATE SET epoch = epoch + 1;"
)
FORWARD = [
    "CREATE TABLE history_vector_epoch (product_id varchar(32) NOT NULL, user_id varchar(128) NOT NULL, "
    "epoch integer NOT NULL, PRIMARY KEY (product_id, user_id))",
    "CREATE TRIGGER history_entry_vector_au AFTER UPDATE OF embedding, embedding_index_id, product_id, user_id "
    f"ON history_entry BEGIN {BUMP.format(row='old')} {BUMP.format(row='new')} END",
    "CREATE INDEX history_entry_vector_idx ON history_entry (product_id, user_id, embedding_index_id, "
    "message_id, conversation_id, round, role, created_at)",
    f"CREATE TRIGGER history_entry_vector_ad AFTER DELETE ON history_entry BEGIN {BUMP.format(row='old')} END",
]
BACKWARD = [
    "DROP INDEX IF EXISTS history_entry_vector_idx",
    "DROP TRIGGER IF EXISTS history_entry_vector_ad",
    "DROP TRIGGER IF EXISTS history_entry_vector_au",
    "DROP TABLE IF EXISTS history_vector_epoch",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("history", "0002_vectors_out_of_line")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
