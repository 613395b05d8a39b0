"""Conversation state (docs/state.md): a revisioned text + categorized records per conversation."""

from __future__ import annotations

from django.db import models

from memories.models import Product


class ConversationState(models.Model):
    """The current state of one (product, user, conversation); `revision` is its compare-and-set revision.

    Created at revision 0 by the first candidate; a conversation that was never written has no row.
    `records` is a list of {category, key, value, updatedRound}, sorted by (category, key).
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    revision = models.BigIntegerField(default=0)
    text = models.TextField(blank=True)
    records = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "user_id", "conversation_id"], name="conversation_state_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} r{self.revision}"


class ConversationStateRevision(models.Model):
    """One committed revision: the whole state as it was, and what the candidate changed."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    state = models.ForeignKey(ConversationState, on_delete=models.CASCADE, related_name="revisions")
    revision = models.BigIntegerField()
    text = models.TextField(blank=True)
    records = models.JSONField(default=list)
    changes = models.JSONField(default=dict, help_text="{textChanged, upserted: [[category, key]], deleted: [...]}")
    scenario_slug = models.CharField(max_length=100, blank=True)
    round = models.PositiveIntegerField(default=0, help_text="The conversation's completed rounds at the commit.")
    actor = models.CharField(max_length=200, blank=True)
    operation_id = models.CharField(max_length=128, blank=True)
    CAUSES = [("write", "write"), ("rollback", "rollback"), ("reapply", "reapply")]
    cause = models.CharField(max_length=16, choices=CAUSES, default="write")
    turn = models.ForeignKey(
        "memories.Turn",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The turn this revision concerns: the turn that wrote it, or whose writes it undid or reapplied.",
    )
    restored_from = models.BigIntegerField(null=True, blank=True, help_text="rollback/reapply: the revision restored.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["state", "revision"], name="conversation_state_revision_unique")]
        ordering = ["-revision"]

    def __str__(self) -> str:
        return f"r{self.revision}"
