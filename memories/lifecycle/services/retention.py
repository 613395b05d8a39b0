"""Retention: per-product limits on history, pruned in batches by a beat task; the current version always stays."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from memoryhub.errors import InvalidRequest

from ..models import ProductRetention

logger = logging.getLogger(__name__)
BATCH = 500
# Above it a column (PositiveIntegerField) or a day count (timedelta) would overflow: a 500, not a 400.
MAX_LIMIT = 1_000_000

FIELDS = {
    "memoryRevisionsKeep": "memory_revisions_keep",
    "memoryRevisionsDays": "memory_revisions_days",
    "eventsDays": "events_days",
    "turnPromptsDays": "turn_prompts_days",
    "tableVersionsKeep": "table_versions_keep",
    "stateVersionsKeep": "state_versions_keep",
}


def retention_get(product: Any) -> ProductRetention:
    found = ProductRetention.objects.filter(product=product).first()
    return found or ProductRetention(product=product)


def retention_to_dict(retention: ProductRetention) -> dict[str, int | None]:
    return {name: getattr(retention, attr) for name, attr in FIELDS.items()}


def limit_allowed(value: object) -> bool:
    """A retention limit: null (keep everything) or a whole number from 1 to MAX_LIMIT (API and admin alike)."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LIMIT)


def retention_update(*, product: Any, changes: dict[str, int | None]) -> ProductRetention:
    """Set some limits (null: keep everything); each is a whole number ≥ 1."""
    retention = retention_get(product)
    for name, value in changes.items():
        if name not in FIELDS:
            raise InvalidRequest(f"unknown retention setting {name!r}", details={"field": f"retention.{name}"})
        if not limit_allowed(value):
            raise InvalidRequest(
                f"{name} must be a whole number from 1 to {MAX_LIMIT} or null", details={"field": f"retention.{name}"}
            )
        setattr(retention, FIELDS[name], value)
    retention.save()
    return retention


def _batched_delete(queryset: models.QuerySet, label: str, log: Callable[[str], None]) -> int:
    total = 0
    while True:
        pks = list(queryset.values_list("pk", flat=True)[:BATCH])
        if not pks:
            return total
        total += queryset.model._base_manager.filter(pk__in=pks).delete()[0]
        log(f"{label}: {total} pruned")


def _batched_update(queryset: models.QuerySet, values: dict, label: str, log: Callable[[str], None]) -> int:
    total = 0
    while True:
        pks = list(queryset.values_list("pk", flat=True)[:BATCH])
        if not pks:
            return total
        total += queryset.model._base_manager.filter(pk__in=pks).update(**values)
        log(f"{label}: {total} pruned")


def prune_product(retention: ProductRetention, *, now: datetime | None = None) -> dict[str, int]:
    now = now or timezone.now()
    product = retention.product
    counts: dict[str, int] = {}

    def log(message: str) -> None:
        logger.info("retention %s: %s", product.pk, message)

    def cutoff(days: int) -> datetime:
        return now - timedelta(days=days)

    document = apps.get_model("memories", "MemoryDocument")
    revision = apps.get_model("memories", "MemoryRevision")
    current_revision = Subquery(
        document.objects.filter(
            product=OuterRef("product"), user_id=OuterRef("user_id"), conversation_id=OuterRef("conversation_id")
        ).values("revision")[:1]
    )
    revisions = revision.objects.filter(product=product).annotate(current=current_revision)
    condition = Q()
    if retention.memory_revisions_keep:
        condition |= Q(revision__lte=F("current") - retention.memory_revisions_keep)
    if retention.memory_revisions_days:
        condition |= Q(created_at__lt=cutoff(retention.memory_revisions_days))
    if condition:
        # never the current revision (nor one whose document is gone: current is NULL then, and it stays)
        pks = revisions.filter(condition).filter(revision__lt=F("current")).values("pk")
        counts["memories.MemoryRevision"] = _batched_delete(
            revision.objects.filter(pk__in=pks), "memory revisions", log
        )

    if retention.events_days:
        event = apps.get_model("memories", "Event")
        events = event.objects.filter(product=product, created_at__lt=cutoff(retention.events_days))
        counts["memories.Event"] = _batched_delete(events, "events", log)

    if retention.turn_prompts_days:
        turn = apps.get_model("memories", "Turn")
        turns = turn.objects.filter(product=product, created_at__lt=cutoff(retention.turn_prompts_days)).exclude(
            prompt="", variables={}
        )
        counts["turnPrompts"] = _batched_update(turns, {"prompt": "", "variables": {}}, "turn prompts", log)

    if retention.table_versions_keep:
        version = apps.get_model("tables", "MemoryTableVersion")
        versions = version.objects.filter(
            product=product, version__lte=F("table__version") - retention.table_versions_keep
        )
        counts["tables.MemoryTableVersion"] = _batched_delete(
            versions.exclude(version=F("table__version")), "table versions", log
        )

    if retention.state_versions_keep:
        state_revision = apps.get_model("state", "ConversationStateRevision")
        states = state_revision.objects.filter(
            product=product, revision__lte=F("state__revision") - retention.state_versions_keep
        )
        counts["state.ConversationStateRevision"] = _batched_delete(
            states.exclude(revision=F("state__revision")), "state revisions", log
        )
    return counts


def prune_all(*, now: datetime | None = None) -> dict[str, dict[str, int]]:
    """The beat task: every product with settings, in batches."""
    done = {}
    for retention in ProductRetention.objects.select_related("product"):
        broken = [name for name, attr in FIELDS.items() if not limit_allowed(getattr(retention, attr))]
        if broken:  # stored before the admin checked limits: never guessed, and no other product held up
            logger.error("retention %s: skipped, out of range: %s", retention.product_id, ", ".join(broken))
            continue
        done[retention.product_id] = prune_product(retention, now=now)
        logger.info("retention %s: done %s", retention.product_id, done[retention.product_id])
    return done
