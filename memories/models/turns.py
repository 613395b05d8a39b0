from __future__ import annotations

from django.db import models

from .fields import NameListField
from .products import Product
from .scenarios import Scenario


class Conversation(models.Model):
    """A user's conversation, created implicitly on first turn; holds the round counter and is the lock row."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    rounds = models.PositiveIntegerField(default=0, help_text="Completed rounds.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "user_id", "conversation_id"], name="conversation_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id}"


class Turn(models.Model):
    """One prepared turn: exactly what the model was given, and what happened afterwards."""

    STATUSES = [
        ("prepared", "prepared"),
        ("completed", "completed"),
        ("committed", "committed"),
        ("superseded", "superseded"),
    ]

    # No index of its own: turn_conversation_idx leads with product (one index fewer for every prepare's INSERT).
    product = models.ForeignKey(Product, on_delete=models.CASCADE, db_index=False)
    # The Conversation row (round counter, lock); `conversation_id` is, as on every model, the product's id for it.
    conversation_row = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128, help_text="The conversation id as the product names it.")
    scenario = models.ForeignKey(Scenario, on_delete=models.SET_NULL, null=True, blank=True)
    scenario_slug = models.CharField(max_length=100)
    scenario_version = models.PositiveIntegerField()
    runtime = models.CharField(max_length=32)
    round = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=STATUSES, default="prepared")
    request_id = models.CharField(max_length=128, blank=True)
    subscription_category = models.CharField(max_length=16, blank=True)
    user_message = models.TextField()
    assistant_message = models.TextField(blank=True)
    prompt = models.TextField()
    variables = models.JSONField(default=dict)
    referenced_variables = models.JSONField(default=list)
    unreferenced_variables = models.JSONField(default=list)
    sources = models.JSONField(default=list)
    runtime_state = models.JSONField(default=dict, blank=True, help_text="e.g. the Hinos claim id, shadow comparison.")
    memory_write = models.JSONField(default=dict, blank=True)
    replaces = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    rollback = models.JSONField(
        default=dict, blank=True, help_text="What superseding (or selecting) this turn undid or wrote again, per kind."
    )
    witness = models.JSONField(
        default=dict, blank=True, help_text="Group scenes: name (the replying character), userName, present."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    committed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["product", "user_id", "conversation_id", "-id"], name="turn_conversation_idx")]

    def __str__(self) -> str:
        return f"turn {self.pk} r{self.round} ({self.status})"


class Message(models.Model):
    """A stored user or assistant message of a completed turn."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="messages")
    round = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=[("user", "user"), ("assistant", "assistant")])
    content = models.TextField()
    # Witness scopes (docs/roleplay.md): who spoke it and who was there; no `present` = everyone witnessed it.
    name = models.CharField(max_length=100, blank=True, help_text="The speaking character (or the user's persona).")
    present = NameListField(default=list, blank=True, help_text="The characters present when it was said.")
    superseded = models.BooleanField(default=False)
    deleted = models.BooleanField(default=False, help_text="Removed by DELETE …/messages/{id} (kept, never shown).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["product", "user_id", "conversation_id", "id"], name="message_conversation_idx")
        ]

    def __str__(self) -> str:
        return f"{self.role}@r{self.round}"


class Event(models.Model):
    """Something that happened in a conversation (turn.completed, diary.written, memory.write_failed, …)."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="events")
    type = models.CharField(max_length=64, db_index=True)
    details = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["product", "user_id", "conversation_id", "id"], name="event_conversation_idx")]

    def __str__(self) -> str:
        return self.type
