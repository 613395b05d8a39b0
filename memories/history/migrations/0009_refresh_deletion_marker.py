"""PostgreSQL: a held user's rows are counted again only after a deletion in their product.

`memoryhub_history_refresh` (migrations 0007, 0008) counted the user's rows on every call to find rows
deleted since the held snapshot (~0.1 ms for a user of 1,000 messages, on every warm recall). Deletions are
rare (a conversation's or a user's erasure, a product's deletion, retention), so each one now marks its
product in `history_deletion`: a statement-level trigger sets the product's `marker` to a new value of a
sequence (values never repeat). The function returns the marker it read with the rows, in the same snapshot;
the caller passes back the marker its held rows were read with, and the function counts only when it differs
(or for a full read), returning NULL for the count otherwise: no row of the product was deleted in between,
so the held rows and the changed ones are all the user's rows.

TRUNCATE fires no DELETE trigger: it marks the '' row, which every product's marker includes. A row moved to
another user or product (nothing does this) marks its old product like a deletion. The `history_deletion`
rows name products only, never a user; a product's row goes with the product.
"""

from django.db import migrations

OLD_SIGNATURE = "memoryhub_history_refresh(text, text, text[], pg_snapshot, integer)"
SIGNATURE = "memoryhub_history_refresh(text, text, text[], pg_snapshot, integer, bigint)"
TABLES = r"""
CREATE SEQUENCE history_deletion_marker_seq;
CREATE TABLE history_deletion (
    product_id varchar(32) PRIMARY KEY,  -- '' for a TRUNCATE of history_entry
    marker bigint NOT NULL
);

CREATE FUNCTION memoryhub_history_mark_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        INSERT INTO history_deletion VALUES ('', nextval('history_deletion_marker_seq'))
            ON CONFLICT (product_id) DO UPDATE SET marker = EXCLUDED.marker;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO history_deletion VALUES (OLD.product_id, nextval('history_deletion_marker_seq'))
            ON CONFLICT (product_id) DO UPDATE SET marker = EXCLUDED.marker;
    ELSE
        INSERT INTO history_deletion
            SELECT g.product_id, nextval('history_deletion_marker_seq') FROM (SELECT DISTINCT product_id FROM gone) g
            ON CONFLICT (product_id) DO UPDATE SET marker = EXCLUDED.marker;
    END IF;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER history_entry_deleted AFTER DELETE ON history_entry
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_history_mark_deleted();
CREATE TRIGGER history_entry_truncated AFTER TRUNCATE ON history_entry
    FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_history_mark_deleted();
CREATE TRIGGER history_entry_moved AFTER UPDATE OF product_id, user_id ON history_entry
    FOR EACH ROW WHEN (OLD.product_id IS DISTINCT FROM NEW.product_id OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION memoryhub_history_mark_deleted();

-- A product's marker goes with the product (its history rows are deleted first, marking it).
CREATE FUNCTION memoryhub_history_forget_product() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM history_deletion WHERE product_id = OLD.id;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER product_history_deletion_forgotten AFTER DELETE ON memories_product
    FOR EACH ROW EXECUTE FUNCTION memoryhub_history_forget_product();
"""
DROP_TABLES = r"""
DROP TRIGGER IF EXISTS product_history_deletion_forgotten ON memories_product;
DROP FUNCTION IF EXISTS memoryhub_history_forget_product();
DROP TRIGGER IF EXISTS history_entry_moved ON history_entry;
DROP TRIGGER IF EXISTS history_entry_truncated ON history_entry;
DROP TRIGGER IF EXISTS history_entry_deleted ON history_entry;
DROP FUNCTION IF EXISTS memoryhub_history_mark_deleted();
DROP TABLE IF EXISTS history_deletion;
DROP SEQUENCE IF EXISTS history_deletion_marker_seq;
"""
CREATE = r"""
CREATE FUNCTION memoryhub_history_refresh(
    p_product text, p_user text, p_terms text[], p_since pg_snapshot, p_max integer, p_marker bigint
) RETURNS TABLE (
    total bigint, snapshot text, marker bigint, active_index bigint, term_lexemes text[],
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
    v_marker bigint;
    v_index bigint;
    v_lexemes text[];
    v_changed bigint[];
BEGIN
    SELECT coalesce(max(d.marker), 0) INTO v_marker FROM history_deletion d WHERE d.product_id IN (p_product, '');
    IF p_marker IS NULL OR p_marker <> v_marker THEN  -- a full read, or a deletion since: count the rows
        SELECT count(*) INTO v_total FROM (
            SELECT 1 FROM history_entry t WHERE t.product_id = p_product AND t.user_id = p_user LIMIT p_max + 1
        ) c;
    END IF;
    SELECT e.id INTO v_index FROM memories_embeddingindex e WHERE e.status = 'active' ORDER BY e.id LIMIT 1;
    v_lexemes := ARRAY(
        SELECT plainto_tsquery('english', u.term)::text FROM unnest(p_terms) WITH ORDINALITY u(term, n) ORDER BY u.n
    );
    IF v_total IS NULL OR v_total <= p_max THEN
        -- Changed since p_since (all rows for '1:1:', a snapshot that sees no transaction): from its xmin on,
        -- and not visible to it.
        v_changed := ARRAY(
            SELECT t.id FROM history_entry t WHERE t.product_id = p_product AND t.user_id = p_user
                AND t.change_xid >= pg_snapshot_xmin(p_since) AND NOT pg_visible_in_snapshot(t.change_xid, p_since)
        );
    END IF;
    IF coalesce(cardinality(v_changed), 0) = 0 THEN  -- not held, or nothing changed: the header alone
        RETURN QUERY SELECT v_total, v_snapshot, v_marker, v_index, v_lexemes, NULL::bigint, NULL::text,
            NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::bigint,
            NULL::boolean, NULL::text, NULL::jsonb, NULL::bigint, NULL::text, NULL::text[], NULL::integer[];
        RETURN;
    END IF;
    RETURN QUERY SELECT v_total, v_snapshot, v_marker, v_index, v_lexemes,
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


def _run(*statements: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)

    return run


def _previous(apps, schema_editor):
    from importlib import import_module

    previous = import_module("memories.history.migrations.0008_refresh_changed_ids_first").CREATE
    _run(f"DROP FUNCTION IF EXISTS {SIGNATURE};", DROP_TABLES, previous)(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("history", "0008_refresh_changed_ids_first")]

    operations = [migrations.RunPython(_run(TABLES, f"DROP FUNCTION IF EXISTS {OLD_SIGNATURE};", CREATE), _previous)]
