"""PostgreSQL: the keyword text's tsvector stored with each long-term memory (`search_tsv`), under a GIN index.

The BM25 statement (memories.longterm.keyword.bm25_statement) read `to_tsvector('simple', search_text)` of every
row it looked at, twice (the statistics sample and the candidates): 3–4 ms for a user of 100 memories, most of
a hybrid search, and ~145 ms for a rare word in a user of 100,000 (docs/performance.md). Stored, as history's
`search_tsv` is, it is read instead of parsed. The expression index it replaces indexed the same expression.
Adding a stored generated column rewrites the table once. SQLite keeps its FTS5 table (migration 0004).
"""

from django.db import migrations

FORWARD = [
    "ALTER TABLE memories_longtermmemory ADD COLUMN search_tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED",
    "CREATE INDEX longterm_keyword_tsv_gin ON memories_longtermmemory USING gin (search_tsv)",
    "DROP INDEX IF EXISTS longterm_keyword_gin",
]
BACKWARD = [
    "CREATE INDEX IF NOT EXISTS longterm_keyword_gin ON memories_longtermmemory "
    "USING gin (to_tsvector('simple'::regconfig, search_text))",
    "ALTER TABLE memories_longtermmemory DROP COLUMN IF EXISTS search_tsv",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("longterm", "0006_kind_evidence_policy")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
