"""Long-term user memories (docs/long-term-memories.md), their embedding index, operation ids, and task checkpoints."""

from __future__ import annotations

import secrets
from datetime import datetime

from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from memories.longterm.kinds import EVIDENCE_POLICIES, STATEMENT
from memories.models import Product


def new_memory_id() -> str:
    return f"mem_{secrets.token_hex(8)}"


class EmbeddingIndex(models.Model):
    """A vector index pinned to one embedding identity and backend; exactly one is active at a time."""

    STATUSES = [("building", "building"), ("active", "active"), ("retired", "retired")]

    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    preprocessing = models.CharField(max_length=64)
    identity_key = models.CharField(max_length=400, help_text="provider:model:dimension:preprocessing")
    backend = models.CharField(max_length=32, help_text="pgvector, sqlite-exact or qdrant")
    storage_name = models.CharField(max_length=200, blank=True, help_text="HNSW index or Qdrant collection name")
    status = models.CharField(max_length=16, choices=STATUSES, default="building")
    records_indexed = models.PositiveIntegerField(
        default=0, help_text="Records carried by this index at the last count."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memories_embeddingindex"  # kept from when this lived in the memories app
        verbose_name_plural = "embedding indexes"
        constraints = [
            models.UniqueConstraint(fields=["identity_key", "backend"], name="embedding_index_identity_unique"),
            models.UniqueConstraint(fields=["status"], condition=Q(status="active"), name="embedding_index_one_active"),
        ]

    def __str__(self) -> str:
        return f"{self.identity_key} on {self.backend} ({self.status})"


class MemoryKind(models.Model):
    """A kind of long-term memory a product defines (besides the built-in `preference`).

    `content_schema` is a JSON Schema for a memory's content; properties marked `"x-single-valued": true`
    have one current answer per user (a contradicting new memory supersedes the old one).
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    name = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    content_schema = models.JSONField(help_text="JSON Schema (2020-12) of a memory's content.")
    stated_fields = models.JSONField(
        default=list, blank=True, help_text="Content fields whose values must appear in the evidence."
    )
    searchable = models.BooleanField(default=False, help_text="Embedded and keyword-indexed; fixed at creation.")
    text_field = models.CharField(max_length=64, blank=True, help_text="The content field recalled as text.")
    max_per_user = models.PositiveIntegerField(null=True, blank=True)
    default_ttl_days = models.PositiveIntegerField(null=True, blank=True)
    evidence_policy = models.CharField(  # check_definition validates it for the API and the admin alike
        max_length=16,
        choices=[(policy, policy) for policy in EVIDENCE_POLICIES],
        default=STATEMENT,
        help_text="statement: the preference statement rules apply; quote: consent, a verbatim quote and no secret.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "name"], name="longterm_kind_name_unique")]
        ordering = ["product", "name"]

    def __str__(self) -> str:
        return f"{self.product_id}:{self.name}"

    @property
    def single_valued_fields(self) -> list[str]:
        properties = self.content_schema.get("properties") if isinstance(self.content_schema, dict) else None
        if not isinstance(properties, dict):
            return []
        return sorted(
            name for name, spec in properties.items() if isinstance(spec, dict) and spec.get("x-single-valued") is True
        )


def unexpired(now: datetime) -> Q:
    """Memories whose expiry (if any) is still ahead: an expired memory leaves every read at once."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


def current(now: datetime) -> Q:
    """Memories that are neither expired, superseded nor rolled back: what search, recall and lists see."""
    return unexpired(now) & Q(superseded_by="", rolled_back_at__isnull=True)


class LongTermMemory(models.Model):
    """One admitted long-term memory of a user (e.g. a communication preference), versioned for CAS."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    memory_id = models.CharField(max_length=40, default=new_memory_id, editable=False)
    kind = models.CharField(max_length=64)
    content = models.JSONField()
    evidence = models.TextField()
    source = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    search_text = models.TextField(blank=True, help_text="Word-segmented text for keyword search (jieba).")
    # Untyped `vector` so indexes of different dimensions can coexist during a reindex; each index has
    # its own partial HNSW index on `embedding::vector(n)` (PostgreSQL). On SQLite the column holds text.
    embedding = VectorField(null=True, blank=True)
    embedding_index = models.ForeignKey(EmbeddingIndex, on_delete=models.SET_NULL, null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Gone from reads at this time; then deleted.")
    superseded_by = models.CharField(
        max_length=40, blank=True, help_text="The memory id that replaced this one (kept for history)."
    )
    superseded_at = models.DateTimeField(null=True, blank=True)
    # The conversation turn the memory was written for (`turnId`): superseding that turn rolls it back.
    turn = models.ForeignKey("memories.Turn", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    rolled_back_at = models.DateTimeField(
        null=True, blank=True, help_text="Its turn was superseded: kept as history, gone from search, recall, lists."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memories_longtermmemory"  # kept from when this lived in the memories app
        verbose_name = "long-term memory"
        verbose_name_plural = "long-term memories"
        constraints = [
            models.UniqueConstraint(fields=["product", "memory_id"], name="longterm_memory_id_unique"),
        ]
        indexes = [
            models.Index(fields=["product", "user_id", "kind", "id"], name="longterm_user_kind_idx"),
            models.Index(fields=["product", "user_id", "id"], name="longterm_user_idx"),
            models.Index(fields=["expires_at"], name="longterm_expires_idx", condition=Q(expires_at__isnull=False)),
            models.Index(fields=["turn"], name="longterm_turn_idx", condition=Q(turn__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"

    @property
    def key(self) -> str:
        return f"{self.product_id}:{self.user_id}:memory:{self.memory_id}"


class LongTermMemoryVersion(models.Model):
    """One committed state of a long-term memory (created, updated or deleted), with who wrote it."""

    ACTIONS = [
        ("created", "created"),
        ("updated", "updated"),
        ("superseded", "superseded"),
        ("deleted", "deleted"),
        ("rolled_back", "rolled back"),  # its turn was superseded
        ("reapplied", "reapplied"),  # its turn was selected again (a swipe back)
        ("restored", "restored"),  # current again: the memory that superseded it was rolled back
    ]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    memory_id = models.CharField(max_length=40)
    version = models.PositiveIntegerField()
    action = models.CharField(max_length=16, choices=ACTIONS)
    kind = models.CharField(max_length=64)
    content = models.JSONField()
    evidence = models.TextField()
    source = models.TextField(blank=True)
    operation_id = models.CharField(max_length=128, blank=True)
    actor_type = models.CharField(max_length=16)
    actor = models.CharField(max_length=200)
    decision = models.JSONField(null=True, blank=True, help_text="How admission decided (rules, judge).")
    turn = models.ForeignKey("memories.Turn", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    superseded_by = models.CharField(
        max_length=40, blank=True, help_text="superseded / restored: the memory that superseded it (or no more)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memories_longtermmemoryversion"  # kept from when this lived in the memories app
        constraints = [
            models.UniqueConstraint(
                fields=["product", "memory_id", "version", "action"], name="longterm_version_unique"
            ),
        ]
        indexes = [models.Index(fields=["product", "memory_id", "id"], name="longterm_version_idx")]
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.memory_id} v{self.version} {self.action}"


class AdmissionRefusal(models.Model):
    """A proposed memory that the admission rules refused, with the reason (a read-only audit log)."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=64)
    code = models.CharField(max_length=64)
    reason = models.TextField()
    operation_id = models.CharField(max_length=128, blank=True)
    memory_id = models.CharField(max_length=40, blank=True, help_text="Set when an update was refused.")
    # Left empty when the refusal was for a secret: the log must not become a copy of it.
    evidence = models.TextField(blank=True)
    content = models.JSONField(null=True, blank=True)
    actor = models.CharField(max_length=200)
    decision = models.JSONField(null=True, blank=True, help_text="How admission decided (rules, judge).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memories_admissionrefusal"  # kept from when this lived in the memories app
        indexes = [models.Index(fields=["product", "user_id", "id"], name="admission_refusal_user_idx")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.code}"


class Task(models.Model):
    """An agent task of a user: its input snapshot (fixed by the first checkpoint) and its stages."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    task_id = models.CharField(max_length=128)
    input = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memories_task"  # kept from when this lived in the memories app
        constraints = [models.UniqueConstraint(fields=["product", "user_id", "task_id"], name="task_unique")]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.task_id}"

    @property
    def key(self) -> str:
        return f"{self.product_id}:{self.user_id}:task:{self.task_id}"


class TaskCheckpoint(models.Model):
    """One committed stage of a task; committed once, never changed."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="checkpoints")
    stage = models.CharField(max_length=128)
    data = models.JSONField()
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the stage's data.")
    operation_id = models.CharField(max_length=128)
    committed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memories_taskcheckpoint"  # kept from when this lived in the memories app
        constraints = [models.UniqueConstraint(fields=["task", "stage"], name="task_checkpoint_unique")]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.task} · {self.stage}"

    @property
    def key(self) -> str:
        return f"{self.task.key}:{self.stage}"


class TaskReport(models.Model):
    """A task's final report, published atomically once."""

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="report")
    report = models.JSONField()
    fingerprint = models.CharField(max_length=64)
    operation_id = models.CharField(max_length=128, blank=True)
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memories_taskreport"  # kept from when this lived in the memories app

    def __str__(self) -> str:
        return f"report of {self.task}"
