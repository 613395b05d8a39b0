from __future__ import annotations

import secrets

from django.db import models


def new_product_id() -> str:
    return f"prd_{secrets.token_hex(8)}"


class Product(models.Model):
    """A tenant: one customer application; every row belongs to exactly one product."""

    id = models.CharField(primary_key=True, max_length=32, default=new_product_id, editable=False)
    name = models.CharField(max_length=200)
    memory_schema = models.JSONField(
        null=True, blank=True, help_text="JSON Schema every memory document must pass before it is stored."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Erasures of this product's users still running (memories/lifecycle): while 0, no request pays for the
    # 409 erasure_in_progress check (the product row comes with the API key lookup).
    erasures_in_progress = models.PositiveIntegerField(default=0, editable=False)
    # Enabled webhook endpoints (kept by memories.webhooks in the endpoint's own transaction): while 0, a
    # write publishing an event pays no query and no transaction for it.
    webhook_endpoints_enabled = models.PositiveIntegerField(default=0, editable=False)

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class ApiKey(models.Model):
    """A product's API key; only its prefix and a SHA-256 hash are stored."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=24, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.prefix}… ({state})"
