"""The old run-once tables, whose rows migration 0008 carried into RunOnceRecord."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0008_run_once_store"),
    ]

    operations = [
        migrations.DeleteModel(name="IdempotencyRecord"),
        migrations.DeleteModel(name="MemoryOperation"),
    ]
