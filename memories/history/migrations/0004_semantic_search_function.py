"""PostgreSQL: the history semantic search as one PL/pgSQL function, `memoryhub_history_semantic`.

One call instead of BEGIN, SET LOCAL, the search and COMMIT. The function checks that the embedding index is
still the active one (no rows otherwise: the caller reads the index again), counts the user's rows on the
btree up to p_exact_max + 1 and then either
- scans them exactly (a user with few messages): the HNSW iterative scan of a small user beside a large one
  wades through the large user's rows (30 ms at 1,000 messages beside 100,000; docs/performance.md);
  `embedding <=> query` is not the HNSW index's expression, so the planner cannot pick that index;
- or searches the HNSW index, with its settings set inside the function: the SET clauses make them the
  function's own, so they end with it instead of staying for the rest of the caller's transaction.
Both answer nearest first, ties by the newer id, with each row's conversation, round and content (what the
hybrid ranking reads next). Every statement is planned with its values (`plan_cache_mode`): PL/pgSQL's
generic plan of the row count, used from the sixth call, read the table past the other users' rows (43 ms
for a user of 1,000 messages beside one of 100,000). The filters are memories/history/selectors.py's
HistoryFilters and scope, once in the statement text; the planner folds away the unused conditions.
SQLite needs nothing here.
"""

from django.db import migrations

SIGNATURE = (
    "memoryhub_history_semantic(bigint, integer, vector, text, text, text[], timestamptz, timestamptz, text[], "
    "text, integer, text, integer, integer, integer)"
)
CREATE = r"""
CREATE OR REPLACE FUNCTION memoryhub_history_semantic(
    p_index bigint, p_dimension integer, p_query vector, p_product text, p_user text,
    p_conversations text[], p_after timestamptz, p_before timestamptz, p_roles text[],
    p_exclude_conversation text, p_exclude_from_round integer, p_witness text,
    p_limit integer, p_ef_search integer, p_exact_max integer
) RETURNS TABLE (id bigint, distance double precision, conversation_id text, round integer, content text)
LANGUAGE plpgsql STABLE
SET hnsw.ef_search = 40 SET hnsw.iterative_scan = 'relaxed_order' SET hnsw.max_scan_tuples = 200000
SET plan_cache_mode = force_custom_plan
AS $fn$
DECLARE
    v_rows bigint;
    -- $1-$10: the scope and the filters; $11 the query vector, $12 the limit.
    v_from text := ' FROM history_entry h WHERE h.product_id = $1 AND h.user_id = $2'
        ' AND h.embedding_index_id = $3 AND h.embedding IS NOT NULL'
        ' AND (h.message_id IS NULL OR NOT (SELECT m.superseded FROM memories_message m WHERE m.id = h.message_id))'
        ' AND ($4::text[] IS NULL OR h.conversation_id = ANY($4))'
        ' AND ($5::timestamptz IS NULL OR h.created_at >= $5)'
        ' AND ($6::timestamptz IS NULL OR h.created_at < $6)'
        ' AND ($7::text[] IS NULL OR h.role = ANY($7))'
        ' AND ($8::text IS NULL OR $9::integer IS NULL OR NOT (h.conversation_id = $8 AND h.round >= $9))'
        ' AND ($10::text IS NULL OR h.message_id IS NULL OR EXISTS (SELECT 1 FROM memories_message w'
        ' WHERE w.id = h.message_id AND (w.present = ''[]''::jsonb OR w.name = $10'
        ' OR w.present @> jsonb_build_array($10))))';
BEGIN
    IF NOT EXISTS (SELECT 1 FROM memories_embeddingindex e WHERE e.id = p_index AND e.status = 'active') THEN
        RETURN;
    END IF;
    SELECT count(*) INTO v_rows FROM (
        SELECT 1 FROM history_entry t WHERE t.product_id = p_product AND t.user_id = p_user LIMIT p_exact_max + 1
    ) c;
    IF v_rows <= p_exact_max THEN
        RETURN QUERY EXECUTE
            'SELECT h.id, h.embedding <=> $11, h.conversation_id::text, h.round, h.content' || v_from
            || ' ORDER BY 2, 1 DESC LIMIT $12'
        USING p_product, p_user, p_index, p_conversations, p_after, p_before, p_roles, p_exclude_conversation,
            p_exclude_from_round, p_witness, p_query, p_limit;
        RETURN;
    END IF;
    PERFORM set_config('hnsw.ef_search', p_ef_search::text, true);
    RETURN QUERY EXECUTE format(
        'SELECT s.* FROM (SELECT h.id, h.embedding::vector(%s) <=> $11 AS distance, h.conversation_id::text,'
        ' h.round, h.content%s ORDER BY distance LIMIT $12) s ORDER BY s.distance, s.id DESC',
        p_dimension, v_from)
    USING p_product, p_user, p_index, p_conversations, p_after, p_before, p_roles, p_exclude_conversation,
        p_exclude_from_round, p_witness, p_query, p_limit;
END
$fn$;
"""
DROP = f"DROP FUNCTION IF EXISTS {SIGNATURE};"


def _run(statement):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:  # no parameters: format()'s %s stays as it is
                cursor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("history", "0003_sqlite_vector_epoch")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
