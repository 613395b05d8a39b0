"""HinosClaim: `conversation_id` is the product's conversation id, as on every other model; the FK is
`conversation_row` (the same rename as memories 0007 made on Turn).

Two column renames, so every row keeps its values: the FK column conversation_id → conversation_row_id first
(freeing the name), then conversation_key → conversation_id. The index follows its column in the database,
so only the migration state learns its new field list."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hinos", "0001_initial"),
    ]

    operations = [
        migrations.RenameField(model_name="hinosclaim", old_name="conversation", new_name="conversation_row"),
        migrations.RenameField(model_name="hinosclaim", old_name="conversation_key", new_name="conversation_id"),
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveIndex(model_name="hinosclaim", name="hinos_claim_conv_idx"),
                migrations.AddIndex(
                    model_name="hinosclaim",
                    index=models.Index(
                        fields=["product", "user_id", "conversation_id", "status"], name="hinos_claim_conv_idx"
                    ),
                ),
            ],
        ),
    ]
