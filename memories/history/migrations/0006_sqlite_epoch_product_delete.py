"""SQLite: a deleted product's vector change counters (migration 0003) go with it.

They hold user ids. Deleting a product deletes its history rows first, and each deletion bumps (re-creates)
its user's counter row; this trigger runs after the product row itself is deleted. PostgreSQL has no counters.
"""

from django.db import migrations

FORWARD = [
    "CREATE TRIGGER history_vector_epoch_product_ad AFTER DELETE ON memories_product "
    "BEGIN DELETE FROM history_vector_epoch WHERE product_id = old.id; END",
    "DELETE FROM history_vector_epoch WHERE product_id NOT IN (SELECT id FROM memories_product)",
]
BACKWARD = ["DROP TRIGGER IF EXISTS history_vector_epoch_product_ad"]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("history", "0005_change_xid")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
