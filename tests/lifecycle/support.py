"""Filling every app with a user's data, generically (so models added later are filled too), and checking it is gone."""

from __future__ import annotations

import datetime
import decimal
import secrets
import uuid
from typing import Any

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from memories.lifecycle.services.walk import concrete_models, owner_models

SKIP_APPS = {"admin", "auth", "contenttypes", "sessions", "outbox", "lifecycle"}


def _sample(field: models.Field) -> Any:
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, (models.DateTimeField,)):
        return timezone.now()
    if isinstance(field, models.DateField):
        return datetime.date.today()
    if isinstance(field, models.DurationField):
        return datetime.timedelta(seconds=1)
    if isinstance(field, models.DecimalField):
        return decimal.Decimal(1)
    if isinstance(field, models.FloatField):
        return 0.5
    if isinstance(field, models.IntegerField):
        return 1
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.JSONField):
        return {}
    if isinstance(field, models.BinaryField):
        return b"x"
    if isinstance(field, models.CharField):
        return f"s{secrets.token_hex(4)}"[: field.max_length or 9]
    if isinstance(field, models.TextField):
        return "sample text"
    return None


class Filler:
    """One row per model for (product, user, conversation): owner models first, then models reaching them by FK."""

    def __init__(self, product: Any, user_id: str, conversation_id: str):
        self.product, self.user_id, self.conversation_id = product, user_id, conversation_id
        self.made: dict[type[models.Model], models.Model] = {}
        self.failed: dict[str, str] = {}

    def make(self, model: type[models.Model]) -> models.Model | None:
        if model in self.made:
            return self.made[model]
        values: dict[str, Any] = {}
        for field in model._meta.concrete_fields:
            if field.primary_key and (field.has_default() or isinstance(field, models.AutoField)):
                continue
            if field.name == "user_id":
                values[field.name] = self.user_id
            elif field.name == "conversation_id":
                values[field.name] = self.conversation_id
            elif field.is_relation:
                target = field.related_model
                if target._meta.label == "memories.Product":
                    values[field.name] = self.product
                elif target in self.made:
                    values[field.name] = self.made[target]
                elif target is model or field.null:
                    continue
                else:
                    row = self.make(target)
                    if row is None:
                        return None
                    values[field.name] = row
            elif (
                field.has_default()
                or field.null
                or getattr(field, "auto_now", False)
                or getattr(field, "auto_now_add", False)
            ):
                continue
            else:
                values[field.name] = _sample(field)
        try:
            with transaction.atomic():
                row = model._base_manager.create(**values)
        except (IntegrityError, ValueError, TypeError) as exc:
            self.failed[model._meta.label] = str(exc)
            return None
        self.made[model] = row
        return row

    def fill(self) -> dict[type[models.Model], models.Model]:
        for model in owner_models():
            if model._meta.app_label not in SKIP_APPS:
                self.make(model)
        for _ in range(3):  # models without user_id that reach the user's rows by a foreign key
            for model in concrete_models():
                if model in self.made or model._meta.app_label in SKIP_APPS:
                    continue
                if any(
                    f.is_relation and f.related_model in self.made and f.related_model in owned(self.made)
                    for f in model._meta.concrete_fields
                ):
                    self.make(model)
        return self.made


def owned(made: dict) -> set:
    owners = set(owner_models())
    result = {m for m in made if m in owners}
    changed = True
    while changed:
        changed = False
        for model in made:
            if model not in result and any(
                f.is_relation and f.related_model in result for f in model._meta.concrete_fields
            ):
                result.add(model)
                changed = True
    return result


def reachable(product: Any, user_id: str) -> dict[str, set]:
    """An independent walk (reverse relations of _meta) of every row of the user: label → primary keys."""
    found: dict[type[models.Model], set] = {}
    for model in concrete_models():
        names = {f.name for f in model._meta.concrete_fields}
        if {"user_id", "product"} <= names:
            pks = set(model._base_manager.filter(product=product, user_id=user_id).values_list("pk", flat=True))
            if pks:
                found[model] = pks
    frontier = dict(found)
    while frontier:
        new: dict[type[models.Model], set] = {}
        for model, pks in frontier.items():
            for relation in model._meta.related_objects:
                if relation.many_to_many:
                    continue
                related = relation.related_model
                pk_set = set(
                    related._base_manager.filter(**{f"{relation.field.name}__in": list(pks)}).values_list(
                        "pk", flat=True
                    )
                ) - found.get(related, set())
                if pk_set:
                    new.setdefault(related, set()).update(pk_set)
        for model, pks in new.items():
            found.setdefault(model, set()).update(pks)
        frontier = new
    return {m._meta.label: pks for m, pks in found.items()}


def rows_mentioning(text: str) -> list[str]:
    """Rows of any model whose text or JSON columns contain `text` (the user's id): label:pk."""
    hits = []
    for model in concrete_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, (models.CharField, models.TextField)):
                lookup = {f"{field.name}__contains": text}
            elif isinstance(field, models.JSONField):
                rows = model._base_manager.exclude(**{f"{field.name}__isnull": True}).values_list("pk", field.name)
                hits += [f"{model._meta.label}:{pk}" for pk, value in rows if text in str(value)]
                continue
            else:
                continue
            hits += [
                f"{model._meta.label}:{pk}" for pk in model._base_manager.filter(**lookup).values_list("pk", flat=True)
            ]
    return hits


def working_set_keys(product_id: str, user_id: str) -> list[str]:
    """The subject's working-set keys in Redis (django-redis) or in the embedded LocMemCache."""
    from django.core.cache import cache

    prefix = f"ws:{product_id}:{user_id}:"
    if hasattr(cache, "keys"):
        return sorted(cache.keys(f"{prefix}*"))
    return sorted(k for k in cache._cache if prefix in k)  # type: ignore[attr-defined]
