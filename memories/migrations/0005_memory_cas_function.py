"""PostgreSQL: the memory compare-and-set as a PL/pgSQL function.

PL/pgSQL caches the plans of its statements per connection, so a write is not re-planned every time
(Django turns psycopg's prepared statements off to stay compatible with connection poolers, and a
function keeps working behind a transaction-pooling PgBouncer). SQLite needs nothing here.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION memoryhub_memory_cas(
    p_product text, p_user text, p_conversation text, p_expected bigint, p_memory jsonb,
    p_now timestamptz, p_actor_type text, p_actor text
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    committed bigint;
BEGIN
    IF p_expected = 0 THEN
        INSERT INTO memories_memorydocument (product_id, user_id, conversation_id, revision, memory, created_at, updated_at)
        VALUES (p_product, p_user, p_conversation, 1, p_memory, p_now, p_now)
        ON CONFLICT (product_id, user_id, conversation_id) DO NOTHING
        RETURNING revision INTO committed;
    ELSE
        UPDATE memories_memorydocument SET revision = revision + 1, memory = p_memory, updated_at = p_now
        WHERE product_id = p_product AND user_id = p_user AND conversation_id = p_conversation
          AND revision = p_expected
        RETURNING revision INTO committed;
    END IF;
    IF committed IS NOT NULL THEN
        INSERT INTO memories_memoryrevision
            (product_id, user_id, conversation_id, revision, memory, actor_type, actor, created_at)
        VALUES (p_product, p_user, p_conversation, committed, p_memory, p_actor_type, p_actor, p_now);
    END IF;
    RETURN committed;
END
$$;
"""
DROP = "DROP FUNCTION IF EXISTS memoryhub_memory_cas(text, text, text, bigint, jsonb, timestamptz, text, text);"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("memories", "0004_hinos_claims")]
    operations = [migrations.RunPython(create, drop)]
