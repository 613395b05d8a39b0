from django.db import migrations
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_enabled_endpoints(apps, schema_editor):
    """Products that had endpoints before the counter existed start with the right count."""
    Product = apps.get_model("memories", "Product")
    WebhookEndpoint = apps.get_model("webhooks", "WebhookEndpoint")
    enabled = WebhookEndpoint.objects.filter(product_id=OuterRef("pk"), enabled=True)
    count = Subquery(enabled.order_by().values("product_id").annotate(n=Count("pk")).values("n")[:1])
    Product.objects.update(webhook_endpoints_enabled=Coalesce(count, 0))


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0012_product_webhook_endpoints_enabled"),
        ("webhooks", "0001_initial"),
    ]

    operations = [migrations.RunPython(count_enabled_endpoints, migrations.RunPython.noop)]
