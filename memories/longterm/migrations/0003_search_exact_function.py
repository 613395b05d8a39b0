"""PostgreSQL: vectors stored inline, and the per-user exact search as a PL/pgSQL function.

- A row stays whole in the heap up to a page (`toast_tuple_target = 8160`, PostgreSQL's default is 2032),
  and `embedding` uses STORAGE MAIN instead of pgvector's EXTERNAL. With a 512-d vector (2 KB) a row is
  about 2.6 KB: by default the vector went to the TOAST table and, since the row could never get under
  2032 bytes, its texts too. Now reading a user's vectors costs one heap tuple each instead of a TOAST
  index descent and two chunks (≈ 100 against ≈ 450 buffer reads for 100 memories; docs/performance.md),
  and an answered row's content is read without TOAST lookups. A larger row moves its texts out first;
  the vector goes out of line only when nothing else makes the row fit a page. Rows written before keep
  their TOASTed values until they are written again (a reindex to a new identity rewrites all vectors).
- `memoryhub_search_exact` is the search of a user's rows by exact cosine distance, behind a gate: the
  embedding index must still be the active one of its identity and backend. PL/pgSQL caches its
  statements' plans per connection (Django turns psycopg's prepared statements off for poolers), so the
  search is not re-planned every time. Its first row, without a memory, holds the gate and how many rows
  of these kinds the user has, counted on the btree up to p_max + 1 (more than p_max: no hits, the caller
  goes to the HNSW index); the nearest memories follow with their distances, nearest first.
SQLite needs nothing here.
"""

from django.db import migrations

CREATE = """
ALTER TABLE memories_longtermmemory ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE memories_longtermmemory SET (toast_tuple_target = 8160);
CREATE OR REPLACE FUNCTION memoryhub_search_exact(
    p_index bigint, p_identity text, p_backend text, p_product text, p_user text, p_kinds text[],
    p_query vector, p_now timestamptz, p_limit integer, p_offset integer, p_max integer
) RETURNS TABLE (
    live boolean, scanned bigint, distance double precision,
    -- a memory's columns but the vector and the keyword tokens (vectors._ROW_COLUMNS; a test compares them)
    id bigint, product_id text, user_id text, memory_id text, kind text, content jsonb, evidence text,
    source text, version integer, embedding_index_id bigint, expires_at timestamptz, superseded_by text,
    superseded_at timestamptz, created_at timestamptz, updated_at timestamptz
)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_kinds text[];
    v_rows bigint;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM memories_embeddingindex e
        WHERE e.id = p_index AND e.status = 'active' AND e.identity_key = p_identity AND e.backend = p_backend
    ) THEN
        RETURN QUERY SELECT false, 0::bigint, NULL::double precision, NULL::bigint, NULL, NULL, NULL, NULL,
            NULL::jsonb, NULL, NULL, NULL::integer, NULL::bigint, NULL::timestamptz, NULL, NULL::timestamptz,
            NULL::timestamptz, NULL::timestamptz;
        RETURN;
    END IF;
    v_kinds := p_kinds || ARRAY(
        SELECT k.name::text FROM longterm_memorykind k WHERE k.product_id = p_product AND k.searchable);
    -- An upper bound of what the scan would read, counted on the btree (index only), stopping past p_max.
    SELECT count(*) INTO v_rows FROM (
        SELECT 1 FROM memories_longtermmemory t
        WHERE t.product_id = p_product AND t.user_id = p_user AND t.kind = ANY(v_kinds) LIMIT p_max + 1
    ) c;
    RETURN QUERY SELECT true, v_rows, NULL::double precision, NULL::bigint, NULL, NULL, NULL, NULL,
        NULL::jsonb, NULL, NULL, NULL::integer, NULL::bigint, NULL::timestamptz, NULL, NULL::timestamptz,
        NULL::timestamptz, NULL::timestamptz;
    IF v_rows > p_max THEN
        RETURN;
    END IF;
    -- `embedding <=> p_query` is not the HNSW index's expression, and (distance, id) is not its order.
    RETURN QUERY
    SELECT true, NULL::bigint, h.distance, m.id, m.product_id::text, m.user_id::text, m.memory_id::text,
        m.kind::text, m.content, m.evidence, m.source, m.version, m.embedding_index_id, m.expires_at,
        m.superseded_by::text, m.superseded_at, m.created_at, m.updated_at
    FROM (
        SELECT t.id, t.embedding <=> p_query AS distance
        FROM memories_longtermmemory t
        WHERE t.product_id = p_product AND t.user_id = p_user AND t.kind = ANY(v_kinds)
          AND t.embedding_index_id = p_index AND t.embedding IS NOT NULL
          AND t.superseded_by = '' AND (t.expires_at IS NULL OR t.expires_at > p_now)
        ORDER BY 2, 1 LIMIT p_limit OFFSET p_offset
    ) h JOIN memories_longtermmemory m ON m.id = h.id
    ORDER BY h.distance, h.id;
END
$$;
"""
DROP = """
DROP FUNCTION IF EXISTS memoryhub_search_exact(
    bigint, text, text, text, text, text[], vector, timestamptz, integer, integer, integer);
ALTER TABLE memories_longtermmemory ALTER COLUMN embedding SET STORAGE EXTERNAL;
ALTER TABLE memories_longtermmemory RESET (toast_tuple_target);
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("longterm", "0002_kinds_expiry_supersession")]
    operations = [migrations.RunPython(create, drop)]
