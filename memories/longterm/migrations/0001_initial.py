"""The long-term memory models, moved from the memories app: state only, the tables keep their names."""

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models

import memories.longterm.models

MOVED = [
    "embeddingindex",
    "longtermmemory",
    "longtermmemoryversion",
    "admissionrefusal",
    "task",
    "taskcheckpoint",
    "taskreport",
]


def move_content_types(apps, schema_editor):
    """Keep admin permissions and log entries: the moved models' content types change app label."""
    content_type = apps.get_model("contenttypes", "ContentType")
    taken = set(content_type.objects.filter(app_label="longterm").values_list("model", flat=True))
    content_type.objects.filter(app_label="memories", model__in=[m for m in MOVED if m not in taken]).update(
        app_label="longterm"
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("memories", "0006_move_longterm_and_hinos_out"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="EmbeddingIndex",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("provider", models.CharField(max_length=64)),
                        ("model", models.CharField(max_length=200)),
                        ("dimension", models.PositiveIntegerField()),
                        ("preprocessing", models.CharField(max_length=64)),
                        (
                            "identity_key",
                            models.CharField(help_text="provider:model:dimension:preprocessing", max_length=400),
                        ),
                        ("backend", models.CharField(help_text="pgvector, sqlite-exact or qdrant", max_length=32)),
                        (
                            "storage_name",
                            models.CharField(
                                blank=True, help_text="HNSW index or Qdrant collection name", max_length=200
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[("building", "building"), ("active", "active"), ("retired", "retired")],
                                default="building",
                                max_length=16,
                            ),
                        ),
                        (
                            "records_indexed",
                            models.PositiveIntegerField(
                                default=0, help_text="Records carried by this index at the last count."
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("activated_at", models.DateTimeField(blank=True, null=True)),
                        ("retired_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "verbose_name_plural": "embedding indexes",
                        "db_table": "memories_embeddingindex",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("identity_key", "backend"), name="embedding_index_identity_unique"
                            ),
                            models.UniqueConstraint(
                                condition=models.Q(("status", "active")),
                                fields=("status",),
                                name="embedding_index_one_active",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Task",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("user_id", models.CharField(max_length=128)),
                        ("task_id", models.CharField(max_length=128)),
                        ("input", models.JSONField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "product",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memories.product"),
                        ),
                    ],
                    options={
                        "db_table": "memories_task",
                    },
                ),
                migrations.CreateModel(
                    name="TaskCheckpoint",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("stage", models.CharField(max_length=128)),
                        ("data", models.JSONField()),
                        ("fingerprint", models.CharField(help_text="SHA-256 of the stage's data.", max_length=64)),
                        ("operation_id", models.CharField(max_length=128)),
                        ("committed_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "task",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="checkpoints",
                                to="longterm.task",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memories_taskcheckpoint",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="TaskReport",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("report", models.JSONField()),
                        ("fingerprint", models.CharField(max_length=64)),
                        ("operation_id", models.CharField(blank=True, max_length=128)),
                        ("published_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "task",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE, related_name="report", to="longterm.task"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memories_taskreport",
                    },
                ),
                migrations.CreateModel(
                    name="AdmissionRefusal",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("user_id", models.CharField(max_length=128)),
                        ("kind", models.CharField(max_length=64)),
                        ("code", models.CharField(max_length=64)),
                        ("reason", models.TextField()),
                        ("operation_id", models.CharField(blank=True, max_length=128)),
                        (
                            "memory_id",
                            models.CharField(blank=True, help_text="Set when an update was refused.", max_length=40),
                        ),
                        ("evidence", models.TextField(blank=True)),
                        ("content", models.JSONField(blank=True, null=True)),
                        ("actor", models.CharField(max_length=200)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "product",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memories.product"),
                        ),
                    ],
                    options={
                        "db_table": "memories_admissionrefusal",
                        "indexes": [
                            models.Index(fields=["product", "user_id", "id"], name="admission_refusal_user_idx")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="LongTermMemory",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("user_id", models.CharField(max_length=128)),
                        (
                            "memory_id",
                            models.CharField(
                                default=memories.longterm.models.new_memory_id, editable=False, max_length=40
                            ),
                        ),
                        ("kind", models.CharField(max_length=64)),
                        ("content", models.JSONField()),
                        ("evidence", models.TextField()),
                        ("source", models.TextField(blank=True)),
                        ("version", models.PositiveIntegerField(default=1)),
                        (
                            "search_text",
                            models.TextField(blank=True, help_text="Word-segmented text for keyword search (jieba)."),
                        ),
                        ("embedding", pgvector.django.vector.VectorField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "embedding_index",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="longterm.embeddingindex",
                            ),
                        ),
                        (
                            "product",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memories.product"),
                        ),
                    ],
                    options={
                        "verbose_name": "long-term memory",
                        "verbose_name_plural": "long-term memories",
                        "db_table": "memories_longtermmemory",
                        "indexes": [
                            models.Index(fields=["product", "user_id", "kind", "id"], name="longterm_user_kind_idx"),
                            models.Index(fields=["product", "user_id", "id"], name="longterm_user_idx"),
                        ],
                        "constraints": [
                            models.UniqueConstraint(fields=("product", "memory_id"), name="longterm_memory_id_unique")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="LongTermMemoryVersion",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("user_id", models.CharField(max_length=128)),
                        ("memory_id", models.CharField(max_length=40)),
                        ("version", models.PositiveIntegerField()),
                        (
                            "action",
                            models.CharField(
                                choices=[("created", "created"), ("updated", "updated"), ("deleted", "deleted")],
                                max_length=16,
                            ),
                        ),
                        ("kind", models.CharField(max_length=64)),
                        ("content", models.JSONField()),
                        ("evidence", models.TextField()),
                        ("source", models.TextField(blank=True)),
                        ("operation_id", models.CharField(blank=True, max_length=128)),
                        ("actor_type", models.CharField(max_length=16)),
                        ("actor", models.CharField(max_length=200)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "product",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memories.product"),
                        ),
                    ],
                    options={
                        "db_table": "memories_longtermmemoryversion",
                        "ordering": ["-id"],
                        "indexes": [models.Index(fields=["product", "memory_id", "id"], name="longterm_version_idx")],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("product", "memory_id", "version", "action"), name="longterm_version_unique"
                            )
                        ],
                    },
                ),
                migrations.AddConstraint(
                    model_name="task",
                    constraint=models.UniqueConstraint(fields=("product", "user_id", "task_id"), name="task_unique"),
                ),
                migrations.AddConstraint(
                    model_name="taskcheckpoint",
                    constraint=models.UniqueConstraint(fields=("task", "stage"), name="task_checkpoint_unique"),
                ),
            ],
        ),
        migrations.RunPython(move_content_types, migrations.RunPython.noop),
    ]
