"""Run-once records: the stored result of a write that a retry must replay, never repeat."""

from __future__ import annotations

from django.db import models

from .products import Product


class IdempotencyRecord(models.Model):
    """The first successful response to a request carrying an Idempotency-Key, kept for replays."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "key"], name="idempotency_key_unique")]

    def __str__(self) -> str:
        return self.key


class MemoryOperation(models.Model):
    """The committed result of a write carrying an operationId, stored with the write for exact replays (L4)."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    operation_id = models.CharField(max_length=128)
    user_id = models.CharField(max_length=128)
    action = models.CharField(max_length=32, help_text="memory.create, memory.update, task.checkpoint, task.report")
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the canonical request.")
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "operation_id"], name="memory_operation_unique")]

    def __str__(self) -> str:
        return f"{self.operation_id} ({self.action})"
