"""Diaries of a conversation (docs/diaries.md): entries, the per-conversation planning state, plan decisions.

Conversations are addressed as elsewhere by (product, user_id, conversation_id), the ids the
product uses. Entries are append-only: a re-plan adds a new entry, it never edits one.
"""

from __future__ import annotations

from django.db import models

from memories.models import Product, Turn

KIND_SUMMARY_ONLY = "summary_only"
KIND_SUMMARY_AND_DIARY = "summary_and_diary"
KINDS = [(KIND_SUMMARY_ONLY, KIND_SUMMARY_ONLY), (KIND_SUMMARY_AND_DIARY, KIND_SUMMARY_AND_DIARY)]


class DiaryState(models.Model):
    """Per-conversation diary bookkeeping; its row is the lock every diary plan of the conversation takes."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    rounds = models.PositiveIntegerField(default=0, help_text="Highest committed round seen by diary planning.")
    last_diary_round = models.PositiveIntegerField(
        default=0, help_text="Round through which the newest entry (summary only or full) covers; 0 if none."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "user_id", "conversation_id"], name="diary_state_unique")
        ]
        verbose_name = "diary conversation"

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id}"


class DiaryQuotaLock(models.Model):
    """One row per (product, user), locked while a free-category plan counts the user's diary quota."""

    # The quota is per user across conversations, so the per-conversation lock alone would let two
    # conversations of one user both take the last free diary.
    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "user_id"], name="diary_quota_lock_unique")]

    def __str__(self) -> str:
        return self.user_id


class DiaryEntry(models.Model):
    """One appended diary write: a summary of a round range, and the diary body when one was written."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    agent_ref = models.CharField(
        max_length=200, blank=True, help_text="agentRef of the scenario's compassMemory source it was written for."
    )
    round_from = models.PositiveIntegerField()
    round_to = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, choices=KINDS)
    summary = models.TextField()
    body = models.TextField(null=True, blank=True, help_text="The diary text; null for summary_only.")  # noqa: DJ001  null means "no body" (summary_only), not ""
    summarizer = models.CharField(max_length=200)
    subscription_category = models.CharField(max_length=16, help_text="Category of the turn that triggered it.")
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    rolled_back_by = models.ForeignKey(
        Turn,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The superseded turn whose round this entry covered: kept, no longer recalled (docs/roleplay.md).",
    )
    rolled_back_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["product", "user_id", "conversation_id", "round_from", "round_to"],
                condition=models.Q(rolled_back_at__isnull=True),
                name="diary_entry_range_unique",
            )
        ]
        indexes = [
            models.Index(fields=["product", "user_id", "conversation_id", "-id"], name="diary_entry_conversation_idx"),
            models.Index(fields=["product", "user_id", "kind", "created_at"], name="diary_entry_quota_idx"),
        ]
        verbose_name_plural = "diary entries"

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} r{self.round_from}-{self.round_to} {self.kind}"


class DiaryPlanRecord(models.Model):
    """One diary planning decision (skip / summary_only / summary_and_diary), why, and what came of it."""

    OUTCOMES = [("skipped", "skipped"), ("written", "written"), ("failed", "failed")]
    TRIGGERS = [("task", "task"), ("admin", "admin")]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    round = models.PositiveIntegerField()
    subscription_category = models.CharField(max_length=16)
    decision = models.CharField(max_length=20)
    reason = models.TextField()
    round_from = models.PositiveIntegerField(default=0)
    round_to = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=10, choices=OUTCOMES)
    entry = models.ForeignKey(DiaryEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    trigger = models.CharField(max_length=10, choices=TRIGGERS, default="task")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["product", "user_id", "conversation_id", "-id"], name="diary_plan_conversation_idx")
        ]

    def __str__(self) -> str:
        return f"r{self.round} {self.decision} ({self.outcome})"
