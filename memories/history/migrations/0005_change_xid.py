"""PostgreSQL: each history row records the transaction that last changed what its search reads.

`change_xid` is set on insert (its default) and on every update (a trigger), and a change to a turn
message's `superseded`, `present` or `name` — which the search reads through the message — touches the
message's history row too. A process that keeps a user's history resident (memories/history/resident.py)
remembers the snapshot it read them in and asks only for the rows whose change it could not see then:
`NOT pg_visible_in_snapshot(change_xid, <that snapshot>)`, found from the snapshot's xmin on in an index. It needs no counter and takes no lock: a
transaction still running when the snapshot was taken is in its list, so its rows come back once it commits,
whatever order transactions commit in. A deletion leaves fewer rows than the process holds: it reads them all
again. SQLite needs none of it (the resident path is PostgreSQL's).
"""

from django.db import migrations

FORWARD = [
    "ALTER TABLE history_entry ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id()",
    # The user's row count (index only) and the rows changed since a snapshot (its xmin on) in one range each.
    "CREATE INDEX history_entry_change_idx ON history_entry (product_id, user_id, change_xid)",
    """
    CREATE OR REPLACE FUNCTION memoryhub_history_touch() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        NEW.change_xid := pg_current_xact_id();
        RETURN NEW;
    END
    $fn$
    """,
    "CREATE TRIGGER history_entry_touch BEFORE UPDATE ON history_entry FOR EACH ROW "
    "EXECUTE FUNCTION memoryhub_history_touch()",
    """
    CREATE OR REPLACE FUNCTION memoryhub_history_message_touch() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        UPDATE history_entry SET change_xid = pg_current_xact_id() WHERE message_id = NEW.id;
        RETURN NULL;
    END
    $fn$
    """,
    "CREATE TRIGGER memories_message_history_touch AFTER UPDATE OF superseded, present, name ON memories_message "
    "FOR EACH ROW WHEN (OLD.superseded IS DISTINCT FROM NEW.superseded OR OLD.present IS DISTINCT FROM NEW.present "
    "OR OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION memoryhub_history_message_touch()",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS memories_message_history_touch ON memories_message",
    "DROP FUNCTION IF EXISTS memoryhub_history_message_touch()",
    "DROP TRIGGER IF EXISTS history_entry_touch ON history_entry",
    "DROP FUNCTION IF EXISTS memoryhub_history_touch()",
    "DROP INDEX IF EXISTS history_entry_change_idx",
    "ALTER TABLE history_entry DROP COLUMN IF EXISTS change_xid",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:  # no parameters: the bodies' text stays as it is
                for statement in statements:
                    cursor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("history", "0004_semantic_search_function"), ("memories", "0020_message_witness")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
