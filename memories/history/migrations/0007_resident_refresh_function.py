"""PostgreSQL: the held history's freshness statement (memories/history/resident.py) as a PL/pgSQL function.

Sent as text, that statement was planned on every search: 0.4 ms of planning for 0.4 ms of execution, on the
path of every turn with the `history-search` source. PL/pgSQL keeps its statements' plans for the connection
(generic plans are right here: every statement walks `history_entry_change_idx` from (product, user)).

STABLE, not VOLATILE: every statement of a STABLE function sees the calling query's snapshot, so the count,
`pg_current_snapshot()` and the changed rows are read in one snapshot, as they were in the one statement.
The text-search configuration is memories/history/text.py's TS_CONFIG (a test checks that they agree).
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
BEGIN
    SELECT count(*) INTO v_total FROM (
        SELECT 1 FROM history_entry t WHERE t.product_id = p_product AND t.user_id = p_user LIMIT p_max + 1
    ) c;
    SELECT e.id INTO v_index FROM memories_embeddingindex e WHERE e.status = 'active' ORDER BY e.id LIMIT 1;
    v_lexemes := ARRAY(
        SELECT plainto_tsquery('english', u.term)::text FROM unnest(p_terms) WITH ORDINALITY u(term, n) ORDER BY u.n
    );
    IF v_total > p_max THEN  -- not held: no row is read
        RETURN QUERY SELECT v_total, v_snapshot, v_index, v_lexemes, NULL::bigint, NULL::text, NULL::text,
            NULL::integer, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::bigint, NULL::boolean,
            NULL::text, NULL::jsonb, NULL::bigint, NULL::text, NULL::text[], NULL::integer[];
        RETURN;
    END IF;
    -- Changed since p_since (all rows for '1:1:', a snapshot that sees no transaction): from its xmin on,
    -- and not visible to it.
    RETURN QUERY SELECT v_total, v_snapshot, v_index, v_lexemes, changed.* FROM (SELECT 1) one
        LEFT JOIN LATERAL (
            SELECT c.id, c.conversation_id::text, c.client_id::text, c.round, c.role::text, c.name::text,
                c.content, c.created_at, c.message_id, m.superseded, m.name::text, m.present,
                c.embedding_index_id, c.embedding::text,
                (SELECT array_agg(u.lexeme ORDER BY u.lexeme) FROM unnest(c.search_tsv) u),
                (SELECT array_agg(coalesce(array_length(u.positions, 1), 1) ORDER BY u.lexeme)
                    FROM unnest(c.search_tsv) u)
            FROM history_entry c
            LEFT JOIN LATERAL (SELECT w.superseded, w.name, w.present FROM memories_message w
                WHERE w.id = c.message_id) m ON true  -- the message by its key, never a scan of every message
            WHERE c.product_id = p_product AND c.user_id = p_user
                AND c.change_xid >= pg_snapshot_xmin(p_since)
                AND NOT pg_visible_in_snapshot(c.change_xid, p_since)
        ) changed ON true;
END
$fn$;
"""
DROP = f"DROP FUNCTION IF EXISTS {SIGNATURE};"


def _run(statement):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("history", "0006_sqlite_epoch_product_delete")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
