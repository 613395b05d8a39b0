"""PostgreSQL: the API key lookup that every request makes, as a PL/pgSQL function.

Planning the key-and-product join cost more than running it (EXPLAIN: 0.18 ms planning, 0.07 ms execution),
and it was planned on every request because Django turns psycopg's prepared statements off for poolers.
PL/pgSQL keeps the plan per connection and works behind a transaction-pooling PgBouncer, as
memoryhub_memory_cas does (0005). The columns are those of the ORM's query for
`memories.services.products._ACTIVE_KEY`, in its order (tests/test_prepared.py compares them).
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION memoryhub_active_api_key(p_prefix text)
RETURNS TABLE (
    id bigint, product_id varchar, name varchar, prefix varchar, key_hash varchar, created_at timestamptz,
    revoked_at timestamptz, product_pk varchar, product_name varchar, memory_schema jsonb,
    product_created_at timestamptz, erasures_in_progress integer, webhook_endpoints_enabled integer
) LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT k.id, k.product_id, k.name, k.prefix, k.key_hash, k.created_at, k.revoked_at,
           p.id, p.name, p.memory_schema, p.created_at, p.erasures_in_progress, p.webhook_endpoints_enabled
    FROM memories_apikey k JOIN memories_product p ON p.id = k.product_id
    WHERE k.prefix = p_prefix AND k.revoked_at IS NULL
    LIMIT 1;
END
$$;
"""
DROP = "DROP FUNCTION IF EXISTS memoryhub_active_api_key(text);"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("memories", "0014_turn_lz4_compression")]
    operations = [migrations.RunPython(create, drop)]
