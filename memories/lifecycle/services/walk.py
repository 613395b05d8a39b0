"""Find every row of a user in every installed app, generically, by walking the app registry.

A model holds a user's data directly when it has a `product` foreign key to memories.Product and a `user_id`
field ("owner models"); rows of any model that reach such rows through foreign keys belong to the user too
(versions, checkpoints, reports, revisions, …). Models added later are covered without editing this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.apps import apps
from django.db import models

CHUNK = 500


def _fields(model: type[models.Model]) -> dict[str, Any]:
    return {f.name: f for f in model._meta.concrete_fields}


def concrete_models() -> list[type[models.Model]]:
    return [m for m in apps.get_models() if not m._meta.proxy and m._meta.managed]


def owner_models() -> list[type[models.Model]]:
    """Models with a product FK and a user_id field: their rows are a user's data by themselves."""
    found = []
    for model in concrete_models():
        fields = _fields(model)
        product = fields.get("product")
        if "user_id" not in fields or product is None or not product.is_relation:
            continue
        if product.related_model._meta.label == "memories.Product":
            found.append(model)
    return found


def chunks(values: Iterable[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _pks(queryset: models.QuerySet) -> set[Any]:
    return set(queryset.values_list("pk", flat=True))


def user_rows(product: Any, user_id: str, conversation_id: str | None = None) -> dict[type[models.Model], set[Any]]:
    """Every row (model → primary keys) of this user, or of one conversation of this user.

    For a conversation, owner models without a `conversation_id` field (user-level data such as long-term
    memories) are left alone; rows reaching a selected row through a foreign key are always included.
    """
    selected: dict[type[models.Model], set[Any]] = {}
    for model in owner_models():
        manager = model._base_manager
        queryset = manager.filter(product=product, user_id=user_id)
        if conversation_id is not None:
            if "conversation_id" not in _fields(model):
                continue
            queryset = queryset.filter(conversation_id=conversation_id)
        pks = _pks(queryset)
        if pks:
            selected[model] = pks
    _close_over_foreign_keys(selected)
    return selected


def _close_over_foreign_keys(selected: dict[type[models.Model], set[Any]]) -> None:
    """Add rows that point (by a foreign key, any on_delete) at selected rows, until nothing new is found."""
    frontier = {model: set(pks) for model, pks in selected.items()}
    every = concrete_models()
    while frontier:
        found: dict[type[models.Model], set[Any]] = {}
        for model in every:
            for field in model._meta.concrete_fields:
                target = field.related_model if field.is_relation else None
                if target is None or target not in frontier or (not field.many_to_one and not field.one_to_one):
                    continue
                target_pks: Sequence[Any] = sorted(frontier[target], key=str)
                if not getattr(field, "target_field", target._meta.pk).primary_key:
                    continue  # FKs to non-primary fields are not used by the apps; nothing to follow
                for batch in chunks(target_pks):
                    new = _pks(model._base_manager.filter(**{f"{field.name}__in": batch})) - selected.get(model, set())
                    if new:
                        found.setdefault(model, set()).update(new)
        for model, pks in found.items():
            selected.setdefault(model, set()).update(pks)
        frontier = found


def kind_of(model: type[models.Model]) -> str:
    return model._meta.label
