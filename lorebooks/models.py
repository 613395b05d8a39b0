"""Lorebooks (SillyTavern World Info / Character Card books), their entries and every entry's history."""

from __future__ import annotations

from django.db import models

from memories.models import Product


class Lorebook(models.Model):
    """One imported lorebook of a product. `shell` is the file without its entries (kept for export)."""

    FORMATS = [("worldinfo", "World Info"), ("charactercard", "Character Card")]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    slug = models.CharField(max_length=100, help_text="The id the product names it by.")
    name = models.CharField(max_length=200)
    format = models.CharField(max_length=16, choices=FORMATS, help_text="The format it was imported from.")
    shell = models.JSONField(default=dict, help_text="Every field of the file except the entries.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "slug"], name="lorebook_unique")]
        ordering = ["slug"]

    def __str__(self) -> str:
        return f"{self.slug} ({self.format})"


class LorebookEntry(models.Model):
    """One entry: its native JSON as the file carried it (edits merged in); `revision` is its CAS revision."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    lorebook = models.ForeignKey(Lorebook, on_delete=models.CASCADE, related_name="entries")
    uid = models.CharField(max_length=64)
    position = models.PositiveIntegerField(help_text="Its place in the file (export order).")
    data = models.JSONField(help_text="The entry's JSON in the lorebook's format, unknown fields included.")
    deleted = models.BooleanField(default=False)
    revision = models.BigIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["lorebook", "uid"], name="lorebook_entry_unique")]
        ordering = ["position", "pk"]
        verbose_name_plural = "lorebook entries"

    def __str__(self) -> str:
        return f"{self.lorebook.slug}#{self.uid} r{self.revision}"


class LorebookEntryVersion(models.Model):
    """One committed revision of an entry, with who or what wrote it."""

    CAUSES = [
        ("import", "import"),
        ("api_key", "API key"),
        ("operator", "operator"),
        ("tool", "tool"),
        ("proposal", "accepted proposal"),
    ]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    entry = models.ForeignKey(LorebookEntry, on_delete=models.CASCADE, related_name="versions")
    revision = models.BigIntegerField()
    data = models.JSONField()
    deleted = models.BooleanField(default=False)
    cause = models.CharField(max_length=16, choices=CAUSES)
    actor = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["entry", "revision"], name="lorebook_entry_version_unique")]
        ordering = ["-revision"]

    def __str__(self) -> str:
        return f"{self.entry_id} r{self.revision} ({self.cause})"


class LorebookEntryProposal(models.Model):
    """A proposed edit of one entry (a model's, through MCP or the API), committed only when accepted.

    `changes` are World Info view fields, as an edit's; `base_revision` is the entry revision the proposer read:
    accepting commits them under compare-and-set on it, so an entry changed since is a conflict, never a merge.
    """

    STATUSES = [("pending", "pending"), ("accepted", "accepted"), ("rejected", "rejected")]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    entry = models.ForeignKey(LorebookEntry, on_delete=models.CASCADE, related_name="proposals")
    base_revision = models.BigIntegerField()
    changes = models.JSONField(help_text="The World Info fields to change, as an edit's `entry`.")
    reason = models.CharField(max_length=1000, blank=True, help_text="Why the proposer wants it.")
    status = models.CharField(max_length=16, choices=STATUSES, default="pending")
    proposed_by = models.CharField(max_length=200, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    decision_note = models.CharField(max_length=1000, blank=True)
    revision = models.BigIntegerField(null=True, blank=True, help_text="accepted: the entry revision it committed.")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["product", "status"], name="lorebook_proposal_status_idx")]

    def __str__(self) -> str:
        return f"proposal {self.pk} for {self.entry_id} r{self.base_revision} ({self.status})"
