"""PostgreSQL: what a process needs to hold a user's long-term memories and keep them up to date in one call.

A hybrid search ran BM25 and the exact vector scan in SQL and read its page's rows in a second statement:
~3.9 ms for a user of 100 memories, twice mem0's semantic search (docs/performance.md). A process now holds a
user's rows (memories/longterm/resident.py) and ranks them itself; this migration gives it the means to know,
in one statement, that what it holds is still what the database holds. The design is history's (history
migrations 0005, 0009):

- `change_xid`: the transaction that last inserted or updated the row, set by a trigger. Nullable and
  without a default, so adding it rewrites nothing: a row written before it is NULL, which no snapshot taken
  after the migration sees as changed (such a row is read only when a user's rows are read whole).
- `longterm_deletion`: one marker per product (products only, never a user), a new value of a sequence at
  every deletion of a long-term memory of that product (a statement-level trigger), at a TRUNCATE (the ''
  row, which every product's marker includes) and when a row moves to another user or product. A product's
  row goes with the product.
- `memoryhub_longterm_refresh`: the database snapshot, the product's marker, whether the process's embedding
  index is still the active one, the product's own searchable kinds, the query terms' lexemes, and every row
  of the user changed since the snapshot the process last read them in; the user's rows are counted only
  when the marker differs from the one the held rows were read with; and whether the calling transaction has
  written anything (rows it reads may then be rolled back: the process uses them once and does not hold them).
SQLite needs none of it (held memories are PostgreSQL's).
"""

from django.db import migrations

SIGNATURE = "memoryhub_longterm_refresh(text, text, text[], pg_snapshot, integer, bigint, bigint, text, text)"
FORWARD = [
    "ALTER TABLE memories_longtermmemory ADD COLUMN change_xid xid8",
    """
    CREATE FUNCTION memoryhub_longterm_touch() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        NEW.change_xid := pg_current_xact_id();
        RETURN NEW;
    END
    $fn$
    """,
    "CREATE TRIGGER longterm_memory_touch BEFORE INSERT OR UPDATE ON memories_longtermmemory FOR EACH ROW "
    "EXECUTE FUNCTION memoryhub_longterm_touch()",
    "CREATE SEQUENCE longterm_deletion_marker_seq",
    """
    CREATE TABLE longterm_deletion (
        product_id varchar(32) PRIMARY KEY,  -- '' for a TRUNCATE of the memories
        marker bigint NOT NULL
    )
    """,
    """
    CREATE FUNCTION memoryhub_longterm_mark_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        IF TG_OP = 'TRUNCATE' THEN
            INSERT INTO longterm_deletion VALUES ('', nextval('longterm_deletion_marker_seq'))
                ON CONFLICT (product_id) DO UPDATE SET marker = EXCLUDED.marker;
        ELSIF TG_OP = 'UPDATE' THEN
            INSERT INTO longterm_deletion VALUES (OLD.product_id, nextval('longterm_deletion_marker_seq'))
                ON CONFLICT (product_id) DO UPDATE SET marker = EXCLUDED.marker;
        ELSE
            INSERT INTO longterm_deletion
                SELECT g.product_id, nextval('longterm_deletion_marker_seq')
                FROM (SELECT DISTINCT product_id FROM gone ORDER BY product_id) g
                ON CONFLICT (product_id) DO UPDATE SET marker = EXCLUDED.marker;
        END IF;
        RETURN NULL;
    END
    $fn$
    """,
    "CREATE TRIGGER longterm_memory_deleted AFTER DELETE ON memories_longtermmemory "
    "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_longterm_mark_deleted()",
    "CREATE TRIGGER longterm_memory_truncated AFTER TRUNCATE ON memories_longtermmemory "
    "FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_longterm_mark_deleted()",
    "CREATE TRIGGER longterm_memory_moved AFTER UPDATE OF product_id, user_id ON memories_longtermmemory "
    "FOR EACH ROW WHEN (OLD.product_id IS DISTINCT FROM NEW.product_id OR OLD.user_id IS DISTINCT FROM NEW.user_id) "
    "EXECUTE FUNCTION memoryhub_longterm_mark_deleted()",
    """
    CREATE FUNCTION memoryhub_longterm_forget_product() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        DELETE FROM longterm_deletion WHERE product_id = OLD.id;
        RETURN NULL;
    END
    $fn$
    """,
    "CREATE TRIGGER product_longterm_deletion_forgotten AFTER DELETE ON memories_product "
    "FOR EACH ROW EXECUTE FUNCTION memoryhub_longterm_forget_product()",
    r"""
    CREATE FUNCTION memoryhub_longterm_refresh(
        p_product text, p_user text, p_terms text[], p_since pg_snapshot, p_max integer, p_marker bigint,
        p_index bigint, p_identity text, p_backend text
    ) RETURNS TABLE (
        total bigint, snapshot text, marker bigint, live boolean, own_kinds text[], term_lexemes text[],
        own_writes boolean, embedding bytea, lexemes text[],
        -- a memory's answered columns (vectors._ROW_COLUMNS; a test compares them)
        id bigint, product_id text, user_id text, memory_id text, kind text, content jsonb, evidence text,
        source text, version integer, embedding_index_id bigint, expires_at timestamptz, superseded_by text,
        superseded_at timestamptz, turn_id bigint, rolled_back_at timestamptz, created_at timestamptz,
        updated_at timestamptz
    )
    LANGUAGE plpgsql STABLE
    AS $fn$
    #variable_conflict use_column
    DECLARE
        v_total bigint;
        v_snapshot text := pg_current_snapshot()::text;
        v_marker bigint;
        v_live boolean;
        v_kinds text[];
        v_lexemes text[];
        v_changed bigint[];
        -- This transaction has written: what it reads may be rolled back, and a rollback leaves no trace to see.
        v_own_writes boolean := pg_current_xact_id_if_assigned() IS NOT NULL;
    BEGIN
        -- One statement for the three small reads (each statement of a function costs an executor start).
        SELECT coalesce((SELECT max(d.marker) FROM longterm_deletion d WHERE d.product_id IN (p_product, '')), 0),
            EXISTS (
                SELECT 1 FROM memories_embeddingindex e
                WHERE e.id = p_index AND e.status = 'active' AND e.identity_key = p_identity AND e.backend = p_backend
            ),
            ARRAY(SELECT k.name::text FROM longterm_memorykind k WHERE k.product_id = p_product AND k.searchable)
        INTO v_marker, v_live, v_kinds;
        IF p_marker IS NULL OR p_marker <> v_marker THEN  -- a full read, or a deletion since: count the rows
            SELECT count(*) INTO v_total FROM (
                SELECT 1 FROM memories_longtermmemory t
                WHERE t.product_id = p_product AND t.user_id = p_user LIMIT p_max + 1
            ) c;
        END IF;
        IF cardinality(p_terms) > 0 THEN  -- terms whose lexemes the process has not learnt yet
            v_lexemes := ARRAY(
                SELECT plainto_tsquery('simple'::regconfig, u.term)::text
                FROM unnest(p_terms) WITH ORDINALITY u(term, n) ORDER BY u.n
            );
        END IF;
        IF v_total IS NULL OR v_total <= p_max THEN
            -- Changed since p_since (every row when NULL: a full read, the only one that reads a row not
            -- changed since this migration, whose change_xid is NULL).
            v_changed := ARRAY(
                SELECT t.id FROM memories_longtermmemory t WHERE t.product_id = p_product AND t.user_id = p_user
                    AND (p_since IS NULL OR (t.change_xid >= pg_snapshot_xmin(p_since)
                        AND NOT pg_visible_in_snapshot(t.change_xid, p_since)))
            );
        END IF;
        IF coalesce(cardinality(v_changed), 0) = 0 THEN  -- not held, or nothing changed: the header alone
            RETURN QUERY SELECT v_total, v_snapshot, v_marker, v_live, v_kinds, v_lexemes, v_own_writes, NULL::bytea,
                NULL::text[], NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::text,
                NULL::text, NULL::integer, NULL::bigint, NULL::timestamptz, NULL::text, NULL::timestamptz,
                NULL::bigint, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz;
            RETURN;
        END IF;
        RETURN QUERY SELECT v_total, v_snapshot, v_marker, v_live, v_kinds, v_lexemes, v_own_writes,
                -- pgvector's binary form (vector_send): no float text to parse, ~0.15 ms a vector
                vector_send(m.embedding), (SELECT array_agg(u.lexeme) FROM unnest(m.search_tsv) u),
                m.id, m.product_id::text, m.user_id::text, m.memory_id::text, m.kind::text, m.content,
                m.evidence, m.source, m.version, m.embedding_index_id, m.expires_at, m.superseded_by::text,
                m.superseded_at, m.turn_id, m.rolled_back_at, m.created_at, m.updated_at
            FROM memories_longtermmemory m WHERE m.id = ANY (v_changed);
    END
    $fn$
    """,
]
BACKWARD = [
    f"DROP FUNCTION IF EXISTS {SIGNATURE}",
    "DROP TRIGGER IF EXISTS product_longterm_deletion_forgotten ON memories_product",
    "DROP FUNCTION IF EXISTS memoryhub_longterm_forget_product()",
    "DROP TRIGGER IF EXISTS longterm_memory_moved ON memories_longtermmemory",
    "DROP TRIGGER IF EXISTS longterm_memory_truncated ON memories_longtermmemory",
    "DROP TRIGGER IF EXISTS longterm_memory_deleted ON memories_longtermmemory",
    "DROP FUNCTION IF EXISTS memoryhub_longterm_mark_deleted()",
    "DROP TABLE IF EXISTS longterm_deletion",
    "DROP SEQUENCE IF EXISTS longterm_deletion_marker_seq",
    "DROP TRIGGER IF EXISTS longterm_memory_touch ON memories_longtermmemory",
    "DROP FUNCTION IF EXISTS memoryhub_longterm_touch()",
    "ALTER TABLE memories_longtermmemory DROP COLUMN IF EXISTS change_xid",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:  # no parameters: the bodies' text stays as it is
                for statement in statements:
                    cursor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("longterm", "0007_stored_keyword_tsvector"), ("memories", "0001_initial")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
