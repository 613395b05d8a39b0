"""Turn: `conversation_id` is the product's conversation id, as on every other model; the FK is `conversation_row`.

Two column renames, so every row keeps its values: the FK column conversation_id → conversation_row_id first
(freeing the name), then conversation_key → conversation_id. The index turn_conversation_idx follows its
column in the database (PostgreSQL and SQLite rename the column inside the index), so only the migration
state learns its new field list. Scenario.memory_runtime takes its choices from the runtime registry
(state only: choices are not in the database)."""

from django.db import migrations, models

import memoryhub.runtimes.registry


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0006_move_longterm_and_hinos_out"),
    ]

    operations = [
        migrations.RenameField(model_name="turn", old_name="conversation", new_name="conversation_row"),
        migrations.RenameField(model_name="turn", old_name="conversation_key", new_name="conversation_id"),
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveIndex(model_name="turn", name="turn_conversation_idx"),
                migrations.AddIndex(
                    model_name="turn",
                    index=models.Index(
                        fields=["product", "user_id", "conversation_id", "-id"], name="turn_conversation_idx"
                    ),
                ),
            ],
        ),
        migrations.AlterField(
            model_name="scenario",
            name="memory_runtime",
            field=models.CharField(
                choices=memoryhub.runtimes.registry.runtime_choices, default="personalization", max_length=32
            ),
        ),
    ]
