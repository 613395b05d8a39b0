"""The Hinos models, moved from the memories app: state only, the tables keep their names."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ["hinosclaim", "failedhinoscommit"]


def move_content_types(apps, schema_editor):
    """Keep admin permissions and log entries: the moved models' content types change app label."""
    content_type = apps.get_model("contenttypes", "ContentType")
    taken = set(content_type.objects.filter(app_label="hinos").values_list("model", flat=True))
    content_type.objects.filter(app_label="memories", model__in=[m for m in MOVED if m not in taken]).update(
        app_label="hinos"
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
                    name="FailedHinosCommit",
                    fields=[],
                    options={
                        "verbose_name": "failed Hinos commit",
                        "proxy": True,
                        "indexes": [],
                        "constraints": [],
                    },
                    bases=("memories.event",),
                ),
                migrations.CreateModel(
                    name="HinosClaim",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("claim_id", models.CharField(max_length=64, unique=True)),
                        ("user_id", models.CharField(max_length=128)),
                        (
                            "conversation_key",
                            models.CharField(help_text="The x-flow-conversation-id of the prepare.", max_length=128),
                        ),
                        (
                            "scenario_slug",
                            models.CharField(
                                blank=True, help_text="scenario_id as the harness sent it.", max_length=100
                            ),
                        ),
                        ("request_id", models.CharField(blank=True, max_length=128)),
                        ("model_config_id", models.CharField(blank=True, max_length=200)),
                        ("prompt_id", models.CharField(blank=True, max_length=200)),
                        (
                            "system",
                            models.TextField(blank=True, help_text="The rendered system message the harness sent."),
                        ),
                        ("memory", models.TextField(blank=True, help_text="The memory text served.")),
                        ("sources", models.JSONField(blank=True, default=list)),
                        ("turn", models.PositiveIntegerField(help_text="The round this prepare was for.")),
                        ("state_through_round", models.PositiveIntegerField()),
                        (
                            "status",
                            models.CharField(
                                choices=[("prepared", "prepared"), ("committed", "committed")],
                                default="prepared",
                                max_length=16,
                            ),
                        ),
                        (
                            "commit_digest",
                            models.CharField(
                                blank=True, help_text="sha256 of the committed user/assistant.", max_length=64
                            ),
                        ),
                        (
                            "awaiting",
                            models.JSONField(
                                blank=True, default=list, help_text="Background jobs whose outcome is awaited."
                            ),
                        ),
                        (
                            "reflected_at",
                            models.DateTimeField(
                                blank=True, help_text="When its background work was seen done.", null=True
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("committed_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "committed_turn",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="memories.turn",
                            ),
                        ),
                        (
                            "conversation",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="hinos_claims",
                                to="memories.conversation",
                            ),
                        ),
                        (
                            "product",
                            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memories.product"),
                        ),
                        (
                            "scenario",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="memories.scenario",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memories_hinosclaim",
                        "indexes": [
                            models.Index(
                                fields=["product", "user_id", "conversation_key", "status"], name="hinos_claim_conv_idx"
                            )
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(move_content_types, migrations.RunPython.noop),
    ]
