"""One row per piece of background work a request scheduled (docs/outbox.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class OutboxMessage(models.Model):
    task = models.CharField(max_length=200, help_text="the Celery task name")
    kwargs = models.JSONField(default=dict)
    dedup_key = models.CharField(max_length=255, unique=True, help_text="names the job: one row per key")
    created_at = models.DateTimeField(auto_now_add=True)
    # When the relay should send the row (again) if its task has not finished by then.
    next_attempt_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0, help_text="sends by the relay (the first send is not counted)")
    last_error = models.TextField(blank=True, default="")
    done_at = models.DateTimeField(null=True, blank=True, help_text="when its task finished (acknowledged)")
    outcome = models.CharField(max_length=20, blank=True, default="", help_text="SUCCESS or FAILURE")

    class Meta:
        db_table = "memoryhub_outbox_message"
        indexes = [
            models.Index(fields=["next_attempt_at"], condition=Q(done_at__isnull=True), name="outbox_pending_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.task} {self.kwargs} ({'done' if self.done_at else 'pending'})"

    @property
    def celery_task_id(self) -> str:
        return task_id_for(self.pk)


TASK_ID_PREFIX = "outbox-"


def task_id_for(pk: int) -> str:
    """The Celery task id of every send of row `pk`: the worker acknowledges the row by it."""
    return f"{TASK_ID_PREFIX}{pk}"


def pk_from_task_id(task_id: str | None) -> int | None:
    if not task_id or not task_id.startswith(TASK_ID_PREFIX):
        return None
    try:
        return int(task_id[len(TASK_ID_PREFIX) :])
    except ValueError:
        return None
