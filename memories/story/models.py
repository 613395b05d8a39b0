"""Story snapshots (docs/story.md): world facts, events and narrative state per conversation."""

from __future__ import annotations

from django.db import models

from memories.models import Product


class StorySnapshot(models.Model):
    """The current snapshot of one (product, user, conversation); `version` is its compare-and-set version.

    Created at version 0 by the first settlement. `anchor_message_id` is the assistant message the current
    version was settled on (None at version 0 or after a rollback to the empty story).
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    version = models.BigIntegerField(default=0)
    anchor_message_id = models.BigIntegerField(null=True, blank=True)
    world_facts = models.JSONField(default=dict)
    events = models.JSONField(default=list)
    narrative = models.JSONField(default=dict)
    event_sequence = models.PositiveIntegerField(default=0, help_text="The last event number issued (never reused).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "user_id", "conversation_id"], name="story_snapshot_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} v{self.version}"


class StoryVersion(models.Model):
    """One committed version: the whole snapshot as it was, and what made it (a settlement or a rollback)."""

    CAUSES = [("settlement", "settlement"), ("rollback", "rollback"), ("reapply", "reapply")]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    snapshot = models.ForeignKey(StorySnapshot, on_delete=models.CASCADE, related_name="versions")
    version = models.BigIntegerField()
    anchor_message_id = models.BigIntegerField(null=True, blank=True)
    world_facts = models.JSONField(default=dict)
    events = models.JSONField(default=list)
    narrative = models.JSONField(default=dict)
    cause = models.CharField(max_length=16, choices=CAUSES)
    changes = models.JSONField(default=dict, blank=True)
    restored_from = models.BigIntegerField(
        null=True, blank=True, help_text="For a rollback or reapply: the version restored."
    )
    turn = models.ForeignKey(
        "memories.Turn",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="rollback/reapply: the turn whose settlements it undid or wrote again.",
    )
    rolled_back = models.BooleanField(default=False, help_text="A later rollback discarded this version.")
    actor = models.CharField(max_length=200, blank=True)
    operation_id = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["snapshot", "version"], name="story_version_unique")]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"v{self.version} ({self.cause})"
