"""Compact history: per conversation, the summaries that replace its oldest messages in the `history` variable."""

from __future__ import annotations

from django.db import models

from memories.models import Message, Product, Turn


class CompactionHead(models.Model):
    """One per conversation: the version every new compaction is compared against (compare-and-set); the row a
    regeneration locks while it invalidates compactions."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    version = models.PositiveIntegerField(default=0, help_text="The version of the newest compaction (0: none).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "user_id", "conversation_id"], name="compaction_head_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} v{self.version}"


class Compaction(models.Model):
    """A summary of the conversation's non-superseded messages from `from_message` through `through_message`.

    Each compaction extends the previous one (its summary is re-summarised with the newly covered messages), so
    it always covers the conversation from its first message. Never edited: a regenerated reply inside the
    range marks it invalidated.
    """

    TRIGGERS = [
        ("threshold", "threshold: history passed 80 % of the budget"),
        ("checkpoint", "checkpoint: checkpointEveryRounds"),
        ("inline", "inline: the prepare had to fit"),
        ("rebuild", "rebuild: the previous compaction was invalidated"),
    ]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    version = models.PositiveIntegerField(help_text="The head version this compaction was saved at.")
    previous = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", help_text="The compaction extended."
    )
    summary = models.TextField()
    from_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    through_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    message_count = models.PositiveIntegerField(help_text="Non-superseded messages covered.")
    from_round = models.PositiveIntegerField()
    through_round = models.PositiveIntegerField()
    summarizer = models.CharField(max_length=200)
    trigger = models.CharField(max_length=16, choices=TRIGGERS)
    turn = models.ForeignKey(
        Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", help_text="The committed turn."
    )
    budget_chars = models.PositiveIntegerField()
    history_chars = models.PositiveIntegerField(help_text="The history variable's length right after this compaction.")
    invalidated = models.BooleanField(default=False)
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_by_turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["product", "user_id", "conversation_id", "version"], name="compaction_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"compaction v{self.version} through message {self.through_message_id}"
