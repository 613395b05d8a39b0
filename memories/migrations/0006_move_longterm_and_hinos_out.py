"""State only: long-term memories and the Hinos models now belong to the longterm and hinos apps.

Their tables keep their names (each model sets db_table), so every row stays where it is."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0005_memory_cas_function"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name="admissionrefusal",
                    name="product",
                ),
                migrations.RemoveField(
                    model_name="longtermmemory",
                    name="embedding_index",
                ),
                migrations.RemoveField(
                    model_name="hinosclaim",
                    name="committed_turn",
                ),
                migrations.RemoveField(
                    model_name="hinosclaim",
                    name="conversation",
                ),
                migrations.RemoveField(
                    model_name="hinosclaim",
                    name="product",
                ),
                migrations.RemoveField(
                    model_name="hinosclaim",
                    name="scenario",
                ),
                migrations.RemoveField(
                    model_name="longtermmemory",
                    name="product",
                ),
                migrations.RemoveField(
                    model_name="longtermmemoryversion",
                    name="product",
                ),
                migrations.RemoveField(
                    model_name="task",
                    name="product",
                ),
                migrations.RemoveField(
                    model_name="taskcheckpoint",
                    name="task",
                ),
                migrations.RemoveField(
                    model_name="taskreport",
                    name="task",
                ),
                migrations.DeleteModel(
                    name="FailedHinosCommit",
                ),
                migrations.DeleteModel(
                    name="AdmissionRefusal",
                ),
                migrations.DeleteModel(
                    name="EmbeddingIndex",
                ),
                migrations.DeleteModel(
                    name="HinosClaim",
                ),
                migrations.DeleteModel(
                    name="LongTermMemory",
                ),
                migrations.DeleteModel(
                    name="LongTermMemoryVersion",
                ),
                migrations.DeleteModel(
                    name="TaskCheckpoint",
                ),
                migrations.DeleteModel(
                    name="Task",
                ),
                migrations.DeleteModel(
                    name="TaskReport",
                ),
            ],
        ),
    ]
