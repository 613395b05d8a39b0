from __future__ import annotations

from typing import ClassVar

from django.db import models

from memories.models import Conversation, Event, Product, Scenario, Turn


class HinosClaim(models.Model):
    """One prepare served by memoryhub's Hinos server, committed at most once (docs/hinos.md)."""

    STATUSES = [("prepared", "prepared"), ("committed", "committed")]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    claim_id = models.CharField(max_length=64, unique=True)
    conversation_row = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="hinos_claims")
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128, help_text="The x-flow-conversation-id of the prepare.")
    scenario = models.ForeignKey(Scenario, on_delete=models.SET_NULL, null=True, blank=True)
    scenario_slug = models.CharField(max_length=100, blank=True, help_text="scenario_id as the harness sent it.")
    request_id = models.CharField(max_length=128, blank=True)
    model_config_id = models.CharField(max_length=200, blank=True)
    prompt_id = models.CharField(max_length=200, blank=True)
    system = models.TextField(blank=True, help_text="The rendered system message the harness sent.")
    memory = models.TextField(blank=True, help_text="The memory text served.")
    sources = models.JSONField(default=list, blank=True)
    turn = models.PositiveIntegerField(help_text="The round this prepare was for.")
    state_through_round = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=STATUSES, default="prepared")
    commit_digest = models.CharField(max_length=64, blank=True, help_text="sha256 of the committed user/assistant.")
    committed_turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    awaiting = models.JSONField(default=list, blank=True, help_text="Background jobs whose outcome is awaited.")
    reflected_at = models.DateTimeField(null=True, blank=True, help_text="When its background work was seen done.")
    created_at = models.DateTimeField(auto_now_add=True)
    committed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memories_hinosclaim"  # kept from when this lived in the memories app
        indexes = [
            models.Index(fields=["product", "user_id", "conversation_id", "status"], name="hinos_claim_conv_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.claim_id} ({self.status})"


class FailedHinosCommitManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(type="memory.write_failed", details__service="hinos")


class FailedHinosCommit(Event):
    """A `memory.write_failed` event of the Hinos client runtime; the admin can re-send its commit."""

    objects: ClassVar[FailedHinosCommitManager] = FailedHinosCommitManager()

    class Meta:
        proxy = True
        verbose_name = "failed Hinos commit"
