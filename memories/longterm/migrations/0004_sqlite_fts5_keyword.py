"""SQLite: an FTS5 index over the keyword tokens, so keyword search ranks by BM25 (docs/recall.md).

An external-content FTS5 table over `memories_longtermmemory.search_text` (the jieba-segmented tokens,
space-separated: the unicode61 tokenizer sees one token per word, Chinese included), kept in step by
triggers, so every write path — ORM, raw SQL, imports — updates it in its own statement. `bm25()` ranks
a search's matches. PostgreSQL needs nothing here (its GIN tsvector index is in 0001).
"""

from django.db import migrations

TABLE = "memories_longtermmemory"
FTS = "memories_longtermmemory_fts"

CREATE = [
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(search_text, content='{TABLE}', content_rowid='id')",
    f"""CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} BEGIN
        INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    f"""CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    END""",
    f"""CREATE TRIGGER {FTS}_au AFTER UPDATE OF search_text ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text);
        INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]
DROP = [f"DROP TRIGGER IF EXISTS {FTS}_{name}" for name in ("ai", "ad", "au")] + [f"DROP TABLE IF EXISTS {FTS}"]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("longterm", "0003_search_exact_function")]

    operations = [migrations.RunPython(forwards, backwards)]
