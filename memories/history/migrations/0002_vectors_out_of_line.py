"""PostgreSQL: a message's vector is stored out of line, so the rows the keyword search reads stay narrow.

With the vector in the row (STORAGE MAIN, 1.5 KB at 384 dimensions) a row passed PostgreSQL's 2 KB toast
threshold about half the time, and then the toaster moved the keyword `tsvector` out instead: every
candidate the keyword search ranked cost a TOAST lookup (1,000 candidates: 11,500 buffer reads, 23 ms).
The vector goes out first now (EXTERNAL, uncompressed: it does not compress) and a row is toasted past
1 KB, so the tsvector, the text and the filter columns stay in a ~500-byte row. The semantic search reads
the vectors from the HNSW index and detoasts only the rows it returns. Rows written before keep their
layout until rewritten (`VACUUM FULL history_entry`). docs/performance.md, Issue 25, has the plans.
"""

from django.db import migrations

FORWARD = [
    "ALTER TABLE history_entry ALTER COLUMN embedding SET STORAGE EXTERNAL",
    "ALTER TABLE history_entry SET (toast_tuple_target = 1024)",
]
BACKWARD = [
    "ALTER TABLE history_entry ALTER COLUMN embedding SET STORAGE MAIN",
    "ALTER TABLE history_entry RESET (toast_tuple_target)",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("history", "0001_initial")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
