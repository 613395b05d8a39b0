"""The run-once store: the stored result of a write that a retry must replay, never repeat.

One table for every way a client names a write: an `Idempotency-Key` header (documents), an
`operationId` (long-term memories, task checkpoints and reports). memories/services/runonce.py
writes a record in the same transaction as the write it belongs to.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .products import Product


class RunOnceRecord(models.Model):
    """The committed result of one named write, kept so that the same request again replays it exactly."""

    class Kind(models.TextChoices):
        IDEMPOTENCY_KEY = "idempotency-key", "Idempotency-Key header"
        OPERATION = "operation", "operationId"

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    key = models.CharField(max_length=255, help_text="The Idempotency-Key or the operationId.")
    # An Idempotency-Key record names the user and conversation of the document it wrote, so erasing either
    # removes it and a retry afterwards writes anew (data-lifecycle.md); an operationId record is user-level.
    user_id = models.CharField(max_length=128, blank=True, help_text="The user the write addressed.")
    conversation_id = models.CharField(
        max_length=128, blank=True, default="", help_text="The conversation of an Idempotency-Key's document write."
    )
    action = models.CharField(
        max_length=32, help_text="memory.replace, memory.create, memory.update, task.checkpoint, task.report"
    )
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the canonical request.")
    result = models.JSONField(
        help_text="What a replay answers: the HTTP response for an Idempotency-Key, "
        "the service's result for an operationId."
    )
    # A default, not auto_now_add: the data migration keeps the original times (the purge goes by them).
    created_at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "kind", "key"], name="run_once_key_unique")]
        verbose_name = "run-once record"

    def __str__(self) -> str:
        return f"{self.kind} {self.key} ({self.action})"
