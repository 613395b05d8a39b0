"""Product-defined memory kinds: define, change and delete (the rules are in memories/longterm/kinds.py).

A kind belongs to one product; another product's kind does not exist for it (404). Deleting a kind
that still has memories is refused (409 `kind_in_use`) unless `cascade` is asked for, which deletes
those memories with their vectors and history in the same transaction. Every write forgets the
product's kind list in the working set, so recall and search see the change at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from memories.longterm.kinds import STATEMENT, DefinitionInvalid, check_definition, check_name
from memories.longterm.models import LongTermMemory, LongTermMemoryVersion, MemoryKind
from memories.longterm.selectors import kind_get, kinds_scope
from memories.models import Product
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.errors import Conflict, InvalidRequest

from .memories import kind_scope
from .vectors import backend_named

# API name → model field
FIELDS = {
    "description": "description",
    "contentSchema": "content_schema",
    "statedFields": "stated_fields",
    "searchable": "searchable",
    "textField": "text_field",
    "maxPerUser": "max_per_user",
    "defaultTtlDays": "default_ttl_days",
    "evidencePolicy": "evidence_policy",
}
DEFAULTS: dict[str, object] = {
    "description": "",
    "statedFields": [],
    "searchable": False,
    "textField": "",
    "maxPerUser": None,
    "defaultTtlDays": None,
    "evidencePolicy": STATEMENT,
}


def _invalid(exc: DefinitionInvalid) -> InvalidRequest:
    return InvalidRequest(f"invalid memory kind: {exc.field}: {exc.message}", details={"field": exc.field})


def _as_api(kind: MemoryKind) -> dict[str, object]:
    return {api: getattr(kind, field) for api, field in FIELDS.items()}


def kind_create(*, product: Product, data: Mapping[str, object]) -> MemoryKind:
    try:
        name = check_name(data.get("name"))
        merged = {**DEFAULTS, **{k: v for k, v in data.items() if k in FIELDS}}
        if "contentSchema" not in merged:
            raise DefinitionInvalid("contentSchema", "required")
        check_definition(merged)
    except DefinitionInvalid as exc:
        raise _invalid(exc) from None
    kind = MemoryKind(product=product, name=name, **{FIELDS[k]: v for k, v in merged.items()})
    try:
        with transaction.atomic():
            kind.save()
            working_set.invalidate(kinds_scope(product))
    except IntegrityError:
        raise Conflict(
            f"memory kind {name!r} already exists", code="already_exists", details={"field": "name"}
        ) from None
    return kind


def kind_update(*, product: Product, name: str, changes: Mapping[str, object]) -> MemoryKind:
    """Change a kind's definition; memories already written keep the content they were admitted with.

    A changed `evidencePolicy` (like `statedFields`) judges later writes only: nothing stored is re-admitted.
    """
    with transaction.atomic():
        kind = kind_get(product, name, for_update=True)
        if "searchable" in changes and changes["searchable"] != kind.searchable:
            raise InvalidRequest(
                "searchable is fixed when a kind is created (its memories are embedded, or not, when written); "
                "define a new kind instead",
                details={"field": "searchable"},
            )
        merged = {**_as_api(kind), **{k: v for k, v in changes.items() if k in FIELDS}}
        try:
            check_definition(merged)
        except DefinitionInvalid as exc:
            raise _invalid(exc) from None
        for api, value in merged.items():
            setattr(kind, FIELDS[api], value)
        kind.save()
        working_set.invalidate(kinds_scope(product))
    return kind


@dataclass(frozen=True)
class KindDeleted:
    memories: int  # memories deleted with the kind (cascade)


def kind_delete(*, product: Product, name: str, cascade: bool) -> KindDeleted:
    with transaction.atomic():
        kind = kind_get(product, name, for_update=True)
        memories = LongTermMemory.objects.filter(product=product, kind=name)
        count = memories.count()
        if count and not cascade:
            raise Conflict(
                f"memory kind {name!r} still has {count} memor{'y' if count == 1 else 'ies'}; "
                "delete them first or ask for ?cascade=true",
                details={"memories": count},
                code="kind_in_use",
            )
        if count:
            users = list(memories.order_by().values_list("user_id", flat=True).distinct())
            working_set.invalidate(*[kind_scope(UserAddress(product, user), name) for user in users])
            _delete_vectors(memories)
            ids = list(memories.values_list("memory_id", flat=True))
            LongTermMemoryVersion.objects.filter(product=product, memory_id__in=ids).delete()
            memories.delete()
        kind.delete()
        working_set.invalidate(kinds_scope(product))
    return KindDeleted(count)


def _delete_vectors(memories) -> None:
    """Vectors kept outside the row (Qdrant) go with their rows; row backends lose them with the row."""
    by_index: dict[int, list[int]] = {}
    for pk, index_id in memories.filter(embedding_index__isnull=False).values_list("pk", "embedding_index_id"):
        by_index.setdefault(index_id, []).append(pk)
    if not by_index:
        return
    from memories.longterm.models import EmbeddingIndex

    for index in EmbeddingIndex.objects.filter(pk__in=list(by_index)):
        backend = backend_named(index.backend)
        if not backend.stores_in_row:
            backend.delete(index, by_index[index.pk])
