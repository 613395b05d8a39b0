"""Memory tables of a conversation, their version history, and what each turn's reply did to them."""

from __future__ import annotations

from django.db import models

from memories.models import Product, Turn


class MemoryTable(models.Model):
    """One table of one (product, user, conversation), from a scenario template; `version` is its CAS version."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    name = models.CharField(max_length=100)
    position = models.PositiveSmallIntegerField(help_text="The table's index in its scenario's template list.")
    columns = models.JSONField()
    note = models.TextField(blank=True)
    rules = models.JSONField(default=dict, help_text="Trigger texts: init, insert, update, delete.")
    required = models.BooleanField(default=False)
    max_rows = models.PositiveIntegerField(null=True, blank=True)
    rows = models.JSONField(default=list)
    version = models.BigIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["product", "user_id", "conversation_id", "name"], name="memory_table_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["product", "user_id", "conversation_id", "position"], name="memory_table_conv_idx")
        ]
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.conversation_id} · {self.name} v{self.version}"


class MemoryTableVersion(models.Model):
    """One committed version of a table's rows, with what caused it (a turn, an operator, an API key)."""

    CAUSES = [
        ("created", "created"),
        ("turn", "turn"),
        ("operator", "operator"),
        ("api_key", "API key"),
        ("rollback", "rollback"),  # `turn`: the superseded turn whose edits it undid
        ("reapply", "reapply"),  # `turn`: the selected turn whose edits it wrote again
    ]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    table = models.ForeignKey(MemoryTable, on_delete=models.CASCADE, related_name="versions")
    version = models.BigIntegerField()
    rows = models.JSONField()
    cause = models.CharField(max_length=16, choices=CAUSES)
    actor = models.CharField(max_length=200, blank=True)
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["table", "version"], name="memory_table_version_unique")]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{self.table.name} v{self.version} ({self.cause})"


class TableEditRecord(models.Model):
    """What one committed turn's reply did to the tables; its existence makes a redelivered task a no-op."""

    OUTCOMES = [
        ("updated", "updated"),
        ("unchanged", "unchanged"),
        ("conflict", "conflict"),
        ("superseded", "superseded"),
    ]

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="table_edit_record")
    round = models.PositiveIntegerField()
    outcome = models.CharField(max_length=16, choices=OUTCOMES)
    base_versions = models.JSONField(
        default=dict, help_text="{table id: version} the turn's edits were applied to (the tables before its round)."
    )
    result_versions = models.JSONField(default=dict, help_text="{table id: version} after this turn.")
    tables = models.JSONField(default=list, help_text="Tables this turn wrote: id, index, name, fromVersion, version.")
    applied = models.JSONField(default=list)
    skipped = models.JSONField(default=list)
    unclosed_block = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=1, help_text="Apply attempts: 2 after a version conflict.")
    deliveries = models.PositiveIntegerField(default=1, help_text="Times the task ran for this turn (redeliveries).")
    after_step = models.JSONField(default=dict, blank=True, help_text="Outcome of the optional webhook after-step.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["product", "user_id", "conversation_id", "round"], name="table_edit_round_idx")]

    def __str__(self) -> str:
        return f"turn {self.turn_id} r{self.round}: {self.outcome}"
