"""PostgreSQL: the compare-and-set of a memory PUT that checks its API key in the same statement.

A PUT from a key this process has seen before (memories/api/authentication.py) skips the key lookup's round
trip: the write itself checks that the key is still active and that neither the key's row nor its product's
has changed since the process read them, and answers -1
without writing anything otherwise; the request then looks the key up and starts over. Revocation, an
erasure starting and a schema change are therefore seen by the write exactly as by the lookup.

A row's version is `xmin/ctid`: every update writes a new row version, whose transaction id (`xmin`) differs
from the old one's unless both come from the same transaction, and then its place (`ctid`) differs (the old
version cannot have been pruned while its own transaction is open). A row moved without a change (VACUUM FULL)
only makes the write look the key up again.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION memoryhub_memory_cas_for_key(
    p_prefix text, p_key_version text, p_product_version text,
    p_product text, p_user text, p_conversation text, p_expected bigint, p_memory jsonb,
    p_now timestamptz, p_actor_type text, p_actor text
) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM memories_apikey k JOIN memories_product p ON p.id = k.product_id
        WHERE k.prefix = p_prefix AND k.revoked_at IS NULL AND p.id = p_product
          AND k.xmin::text || '/' || k.ctid::text = p_key_version
          AND p.xmin::text || '/' || p.ctid::text = p_product_version
    ) THEN
        RETURN -1;
    END IF;
    RETURN memoryhub_memory_cas(p_product, p_user, p_conversation, p_expected, p_memory, p_now, p_actor_type, p_actor);
END
$$;
"""
DROP = (
    "DROP FUNCTION IF EXISTS memoryhub_memory_cas_for_key(text, text, text, text, text, text, bigint, jsonb,"
    " timestamptz, text, text);"
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("memories", "0016_document_product_index_covered")]
    operations = [migrations.RunPython(create, drop)]
