"""Data lifecycle: erasure receipts and export files (docs/data-lifecycle.md)."""

from __future__ import annotations

import secrets

from django.db import models

from memories.models import Product

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
STATUSES = [(s, s) for s in (PENDING, RUNNING, DONE, FAILED)]
ACTIVE = (PENDING, RUNNING)


def new_erasure_id() -> str:
    return f"era_{secrets.token_hex(10)}"


def new_export_id() -> str:
    return f"exp_{secrets.token_hex(10)}"


class Erasure(models.Model):
    """An erasure job and, once done, its receipt: a salted hash of the subject, counts, who asked — no personal data.

    `pending_user` / `pending_conversation` name the subject only while the job runs (requests for it answer
    409 erasure_in_progress); they are cleared when it is done.
    """

    id = models.CharField(primary_key=True, max_length=32, default=new_erasure_id, editable=False)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=20, choices=[("user", "user"), ("conversation", "conversation")])
    subject_hash = models.CharField(max_length=64, help_text="HMAC-SHA256 of product, user (and conversation)")
    pending_user = models.CharField(max_length=128, blank=True, default="", db_index=True)
    pending_conversation = models.CharField(max_length=128, blank=True, default="")
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    counts = models.JSONField(default=dict, blank=True, help_text="rows (and keys, points, files) removed per kind")
    requested_by = models.CharField(max_length=200, help_text="api_key:<prefix> or operator:<username>")
    requested_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"{self.id} ({self.scope}, {self.status})"


class Export(models.Model):
    """An export job of one user's data and its gzip JSON Lines file under VAR_DIR/exports (deleted after expiry)."""

    id = models.CharField(primary_key=True, max_length=32, default=new_export_id, editable=False)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=128, db_index=True)
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    counts = models.JSONField(default=dict, blank=True)
    file_name = models.CharField(max_length=200, blank=True, default="")
    size_bytes = models.BigIntegerField(null=True, blank=True)
    requested_by = models.CharField(max_length=200)
    requested_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class ProductRetention(models.Model):
    """How long a product keeps history (docs/data-lifecycle.md). Empty fields keep everything (the default)."""

    product = models.OneToOneField(Product, on_delete=models.CASCADE, primary_key=True, related_name="+")
    memory_revisions_keep = models.PositiveIntegerField(
        null=True, blank=True, help_text="keep the newest N revisions of each JSON memory document"
    )
    memory_revisions_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="keep JSON memory revisions D days"
    )
    events_days = models.PositiveIntegerField(null=True, blank=True, help_text="keep events D days")
    turn_prompts_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="keep turns' prompts and variables D days (the turn and its messages stay)"
    )
    table_versions_keep = models.PositiveIntegerField(
        null=True, blank=True, help_text="keep the newest N versions of each memory table"
    )
    state_versions_keep = models.PositiveIntegerField(
        null=True, blank=True, help_text="keep the newest N revisions of each conversation state"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "retention settings"
        verbose_name_plural = "retention settings"

    def __str__(self) -> str:
        return f"retention of {self.product_id}"


def new_import_id() -> str:
    return f"imp_{secrets.token_hex(10)}"


class Import(models.Model):
    """An import job: an export file restored into a user (its file is deleted once imported)."""

    id = models.CharField(primary_key=True, max_length=32, default=new_import_id, editable=False)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=128, db_index=True)
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    report = models.JSONField(default=dict, blank=True, help_text="imported and skipped records per kind")
    file_name = models.CharField(max_length=200, blank=True, default="")
    requested_by = models.CharField(max_length=200)
    requested_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"
