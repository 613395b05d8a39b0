"""PostgreSQL: `memoryhub_history_refresh` (migration 0007) reads the changed rows' ids before the rows.

The rows' statement (a lateral join to the turn message, the lexeme arrays) was planned again on every call:
PostgreSQL kept a custom plan for it, since a generic one can be a sequential scan where a user has most of
the table. Planning it cost ~0.25 ms of a ~0.5 ms call, though most calls find no row changed (a warm
recall). The function now collects the changed ids with a small statement, and reads the rows by key only
when there are any. Same arguments, same columns, same snapshot (STABLE, as before).
"""

from django.db import migrations

SIGNATURE = "memoryhub_history_refresh(text, text, text[], pg_snapshot, integer)"
CREATE = r"""
CREATE OR REPLACE FUNCTION memoryhub_history_refresh(
    p_product text, p_user text, p_terms text[], p_since pg_snapshot, p_max integer
) RETURNS TABLE (
    total bigint, snapshot text, active_index bigint, term_lexemes text[],
    id bigint, conversation_id text, client_id text, round integer, role text, name text, content text,
    created_at timestamptz, message_id bigint, superseded boolean, speaker text, present jsonb,
    embedding_index_id bigint, embedding text, lexemes text[], occurrences integer[]
)
LANGUAGE plpgsql STABLE
AS $fn$
#variable_conflict use_column
DECLARE
    v_total bigint;
    v_snapshot text := pg_current_snapshot()::text;
    v_index bigint;
    v_lexemes text[];
    v_changed bigint[];
BEGIN
    SELECT count(*) INTO v_total FROM (
        SELECT 1 FROM history_entry t WHERE t.product_id = p_product AND t.user_id = p_user LIMIT p_max + 1
    ) c;
    SELECT e.id INTO v_index FROM memories_embeddingindex e WHERE e.status = 'active' ORDER BY e.id LIMIT 1;
    v_lexemes := ARRAY(
        SELECT plainto_tsquery('english', u.term)::text FROM unnest(p_terms) WITH ORDINALITY u(term, n) ORDER BY u.n
    );
    IF v_total <= p_max THEN
        -- Changed since p_since (all rows for '1:1:', a snapshot that sees no transaction): from its xmin on,
        -- and not visible to it.
        v_changed := ARRAY(
            SELECT t.id FROM history_entry t WHERE t.product_id = p_product AND t.user_id = p_user
                AND t.change_xid >= pg_snapshot_xmin(p_since) AND NOT pg_visible_in_snapshot(t.change_xid, p_since)
        );
    END IF;
    IF coalesce(cardinality(v_changed), 0) = 0 THEN  -- not held, or nothing changed: the header alone
        RETURN QUERY SELECT v_total, v_snapshot, v_index, v_lexemes, NULL::bigint, NULL::text, NULL::text,
            NULL::integer, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::bigint, NULL::boolean,
            NULL::text, NULL::jsonb, NULL::bigint, NULL::text, NULL::text[], NULL::integer[];
        RETURN;
    END IF;
    RETURN QUERY SELECT v_total, v_snapshot, v_index, v_lexemes,
            c.id, c.conversation_id::text, c.client_id::text, c.round, c.role::text, c.name::text,
            c.content, c.created_at, c.message_id, m.superseded, m.name::text, m.present,
            c.embedding_index_id, c.embedding::text,
            (SELECT array_agg(u.lexeme ORDER BY u.lexeme) FROM unnest(c.search_tsv) u),
            (SELECT array_agg(coalesce(array_length(u.positions, 1), 1) ORDER BY u.lexeme)
                FROM unnest(c.search_tsv) u)
        FROM history_entry c
        LEFT JOIN LATERAL (SELECT w.superseded, w.name, w.present FROM memories_message w
            WHERE w.id = c.message_id) m ON true  -- the message by its key, never a scan of every message
        WHERE c.id = ANY (v_changed);
END
$fn$;
"""


def _run(statement: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(statement)

    return run


def _previous(apps, schema_editor):
    from importlib import import_module

    _run(import_module("memories.history.migrations.0007_resident_refresh_function").CREATE)(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("history", "0007_resident_refresh_function")]

    operations = [migrations.RunPython(_run(CREATE), _previous)]
