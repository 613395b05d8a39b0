"""Memory kinds gain `evidence_policy`; kinds that exist keep the statement rules ("statement")."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("longterm", "0005_turn_rollback"),
    ]

    operations = [
        migrations.AddField(
            model_name="memorykind",
            name="evidence_policy",
            field=models.CharField(
                choices=[("statement", "statement"), ("quote", "quote")],
                default="statement",
                help_text="statement: the preference statement rules apply; quote: consent, a verbatim quote and no secret.",
                max_length=16,
            ),
        ),
    ]
