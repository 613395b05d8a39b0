"""The history index: one row per message of a user (a turn's stored message, or an imported one)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from memories.longterm.models import EmbeddingIndex
from memories.models import Message, Product


class HistoryEntry(models.Model):
    """A message as the history search sees it.

    A turn's message points at its `memories.Message` row (deleted with it; its `superseded` flag is read at
    search time, so a regenerated reply is never a hit whoever marks it). An imported message has no Message
    row: it lives here only, keyed by the product's `client_id` within the conversation.
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE, db_index=False)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    message = models.OneToOneField(Message, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    client_id = models.CharField(max_length=128, blank=True)
    round = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=[("user", "user"), ("assistant", "assistant")])
    name = models.CharField(max_length=200, blank=True, help_text="The speaker's name, when the product gave one.")
    content = models.TextField()
    search_text = models.TextField(blank=True, help_text="Word-segmented text for keyword search (jieba).")
    created_at = models.DateTimeField(default=timezone.now)
    # Untyped `vector`, as long-term memories: each embedding index has its own partial HNSW index (PostgreSQL).
    embedding = VectorField(null=True, blank=True)
    embedding_index = models.ForeignKey(EmbeddingIndex, on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        db_table = "history_entry"
        verbose_name_plural = "history entries"
        constraints = [
            models.UniqueConstraint(
                fields=["product", "user_id", "conversation_id", "client_id"],
                condition=~Q(client_id=""),
                name="history_entry_client_id_unique",
            )
        ]
        indexes = [
            models.Index(fields=["product", "user_id", "created_at"], name="history_user_time_idx"),
            models.Index(fields=["product", "user_id", "conversation_id", "round"], name="history_conversation_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} r{self.round} {self.role}"
