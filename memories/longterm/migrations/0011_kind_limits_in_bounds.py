"""Memory kinds' maxPerUser and defaultTtlDays brought into the API's bounds (kinds.LIMITS).

The admin once stored 0 (and values over the bounds), which the API refuses. 0 behaved as "no limit" and
"never expires", so it becomes null, which means that; a value over the bound becomes the bound.
"""

from django.db import migrations

LIMITS = {"max_per_user": 100_000, "default_ttl_days": 36_500}  # as kinds.LIMITS when this was written


def forwards(apps, schema_editor):
    kinds = apps.get_model("longterm", "MemoryKind").objects
    for field, high in LIMITS.items():
        kinds.filter(**{field: 0}).update(**{field: None})
        kinds.filter(**{f"{field}__gt": high}).update(**{field: high})


class Migration(migrations.Migration):
    dependencies = [("longterm", "0010_refresh_one_statement")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
