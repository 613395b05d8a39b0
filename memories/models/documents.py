from __future__ import annotations

from django.db import models

from .products import Product


class MemoryDocument(models.Model):
    """The current JSON memory of one (product, user, conversation); `revision` is its CAS version."""

    # No index of its own: memory_document_unique leads with product (fewer indexes for every first write).
    product = models.ForeignKey(Product, on_delete=models.CASCADE, db_index=False)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    revision = models.BigIntegerField()
    memory = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "user_id", "conversation_id"], name="memory_document_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} r{self.revision}"


class MemoryRevision(models.Model):
    """One committed revision of a memory document, with who wrote it (history, M9)."""

    ACTOR_TYPES = [("api_key", "API key"), ("operator", "Operator"), ("tool", "Tool token")]

    # No index of its own: memory_revision_unique leads with product (two index writes fewer for every write).
    product = models.ForeignKey(Product, on_delete=models.CASCADE, db_index=False)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    revision = models.BigIntegerField()
    memory = models.JSONField()
    actor_type = models.CharField(max_length=16, choices=ACTOR_TYPES)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["product", "user_id", "conversation_id", "revision"], name="memory_revision_unique"
            ),
        ]
        ordering = ["-revision"]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} r{self.revision} by {self.actor}"
