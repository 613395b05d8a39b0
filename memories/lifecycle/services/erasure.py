"""Erase a user (or one conversation of a user) everywhere; leave a receipt without personal data."""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.db import models, transaction
from django.db.models import F, Value
from django.db.models.deletion import Collector
from django.db.models.functions import Greatest
from django.utils import timezone

from memories.history.services.forget import forget_user
from memories.longterm import resident as held_memories
from memories.models import Product
from memoryhub import outbox
from memoryhub.errors import Conflict, NotFound
from memoryhub.events import publish as publish_event
from memoryhub.outbox.models import OutboxMessage

from ..models import ACTIVE, DONE, FAILED, RUNNING, Erasure, Export, Import
from . import files
from .walk import chunks, kind_of, user_rows

logger = logging.getLogger(__name__)
TASK = "lifecycle.erase"


def subject_hash(product_id: str, user_id: str, conversation_id: str | None = None) -> str:
    """A salted (keyed) hash of the subject: the receipt can be matched to a user id, never read back."""
    salt = getattr(settings, "ERASURE_RECEIPT_SALT", "") or settings.SECRET_KEY
    message = f"{product_id}\x00{user_id}\x00{conversation_id or ''}".encode()
    return hmac.new(f"erasure:{salt}".encode(), message, hashlib.sha256).hexdigest()


def refuse_during_erasure(product: Any, user_id: str, conversation_id: str | None) -> None:
    """The address check registered at the edge: 409 erasure_in_progress for a subject being erased.

    Free while none of the product's erasures runs (the product row, loaded with the API key, counts them);
    otherwise one indexed lookup.
    """
    if not getattr(product, "erasures_in_progress", 0):
        return
    running = Erasure.objects.filter(product=product, pending_user=user_id, status__in=ACTIVE)
    if conversation_id is None:
        running = running.filter(pending_conversation="")
    else:
        running = running.filter(pending_conversation__in=["", conversation_id])
    erasure_id = running.values_list("id", flat=True).first()
    if erasure_id is not None:
        raise Conflict(
            "this user's data is being erased; try again when the erasure is done",
            code="erasure_in_progress",
            details={"erasureId": erasure_id},
        )


def _count_running(product_id: str, delta: int) -> None:
    Product.objects.filter(pk=product_id).update(
        erasures_in_progress=Greatest(F("erasures_in_progress") + delta, Value(0))
    )


def erasure_preview(*, product: Any, user_id: str, conversation_id: str | None = None) -> dict[str, int]:
    """What an erasure would remove now: rows per kind (the admin's confirmation page)."""
    return {kind_of(m): len(pks) for m, pks in sorted(user_rows(product, user_id, conversation_id).items(), key=_label)}


def erasure_start(
    *, product: Any, user_id: str, conversation_id: str | None = None, requested_by: str, schedule: bool = True
) -> Erasure:
    """Record the erasure (requests for the subject answer 409 from now on) and schedule its job via the outbox.

    `schedule=False` (the management command) only records it; the caller runs `erasure_run` itself.
    """
    product.refresh_from_db(fields=["erasures_in_progress"])
    refuse_during_erasure(product, user_id, conversation_id)
    with transaction.atomic():
        erasure = Erasure.objects.create(
            product=product,
            scope="conversation" if conversation_id else "user",
            subject_hash=subject_hash(product.pk, user_id, conversation_id),
            pending_user=user_id,
            pending_conversation=conversation_id or "",
            requested_by=requested_by[:200],
        )
        _count_running(product.pk, +1)  # from the commit on, requests for the subject answer 409
        if schedule:
            outbox.schedule(TASK, {"erasure_id": erasure.pk}, dedup_key=f"{TASK}:{erasure.pk}")
    erasure.refresh_from_db()  # eager mode: the job already ran at the commit
    return erasure


def erasure_get(*, product: Any, erasure_id: str) -> Erasure:
    erasure = Erasure.objects.filter(product=product, pk=erasure_id).first()
    if erasure is None:
        raise NotFound(f"no erasure {erasure_id!r}")
    return erasure


def erasure_run(*, erasure_id: str) -> Erasure | None:
    """The job: idempotent (a finished erasure is not run again; a rerun after a failure starts over)."""
    erasure = Erasure.objects.filter(pk=erasure_id).select_related("product").first()
    if erasure is None or erasure.status == DONE:
        return erasure
    if erasure.status == FAILED:  # a rerun after a failure: the subject is being erased again
        _count_running(erasure.product_id, +1)
    Erasure.objects.filter(pk=erasure.pk).update(status=RUNNING, started_at=timezone.now(), error="")
    user_id, conversation_id = erasure.pending_user, erasure.pending_conversation or None
    try:
        counts = _erase(erasure.product, user_id, conversation_id)
    except Exception as exc:
        logger.exception("erasure %s failed", erasure.pk)
        _finish(erasure, status=FAILED, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    _finish(erasure, status=DONE, counts=counts, finished_at=timezone.now(), pending_user="", pending_conversation="")
    data = {"erasureId": erasure.pk, "scope": erasure.scope}
    publish_event(erasure.product, "user.erased", user=user_id, conversation=conversation_id, data=data)
    erasure.refresh_from_db()
    return erasure


def _finish(erasure: Erasure, **values: Any) -> None:
    """Leave the running state once (a duplicate delivery does not count the product down twice)."""
    with transaction.atomic():
        if Erasure.objects.filter(pk=erasure.pk, status=RUNNING).update(**values):
            _count_running(erasure.product_id, -1)


def _label(item: tuple[type[models.Model], Any]) -> str:
    return kind_of(item[0])


def _erase(product: Any, user_id: str, conversation_id: str | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    with transaction.atomic():
        rows = user_rows(product, user_id, conversation_id)
        if conversation_id is not None:  # the user's exports and imports hold the conversation too: they go
            for job in (Export, Import):
                mine = job.objects.filter(product=product, user_id=user_id).values_list("pk", flat=True)
                rows.setdefault(job, set()).update(mine)
        counts.update(_delete_export_files(rows.get(Export, set())))
        counts.update(_delete_import_files(rows.get(Import, set())))
        counts.update(_delete_outbox_rows(rows, user_id))
        _delete_admin_log(rows)
        points = _delete_vector_points(rows)
        collector = Collector(using=transaction.get_connection().alias)
        for model, pks in rows.items():
            for batch in chunks(sorted(pks, key=str)):
                collector.collect(model._base_manager.filter(pk__in=batch))
        _, per_model = collector.delete()
        counts.update({label: n for label, n in per_model.items() if n})
        if conversation_id is None:
            forget_user(product.pk, user_id)
        held_memories.forget(product.pk, user_id)  # this process's copy; other processes' go at their next search
        if points:
            counts["vectorPoints"] = points
    counts["workingSetKeys"] = delete_working_set(product.pk, user_id, conversation_id)
    return dict(sorted(counts.items()))


def _delete_export_files(pks: set[Any]) -> dict[str, int]:
    removed = sum(files.remove(name) for name in Export.objects.filter(pk__in=pks).values_list("file_name", flat=True))
    return {"exportFiles": removed} if removed else {}


def _delete_import_files(pks: set[Any]) -> dict[str, int]:
    removed = sum(files.remove(name) for name in Import.objects.filter(pk__in=pks).values_list("file_name", flat=True))
    return {"importFiles": removed} if removed else {}


def _delete_outbox_rows(rows: dict[type[models.Model], set[Any]], user_id: str) -> dict[str, int]:
    """Outbox rows whose arguments name the user or one of its rows (`turn_pk`, …) go with them."""
    doomed: set[int] = set()
    for model, pks in rows.items():
        key = f"{model._meta.model_name}_pk"
        for batch in chunks(sorted(pks, key=str)):
            doomed |= set(OutboxMessage.objects.filter(**{f"kwargs__{key}__in": batch}).values_list("pk", flat=True))
    doomed |= set(OutboxMessage.objects.filter(kwargs__user_id=user_id).values_list("pk", flat=True))
    deleted = 0
    for batch in chunks(sorted(doomed)):
        deleted += OutboxMessage.objects.filter(pk__in=batch).delete()[0]
    return {kind_of(OutboxMessage): deleted} if deleted else {}


def _delete_admin_log(rows: dict[type[models.Model], set[Any]]) -> None:
    """The admin's change log names objects (object_repr): entries about erased rows go too."""
    for model, pks in rows.items():
        content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
        for batch in chunks(sorted(str(pk) for pk in pks)):
            LogEntry.objects.filter(content_type=content_type, object_id__in=batch).delete()


def _delete_vector_points(rows: dict[type[models.Model], set[Any]]) -> int:
    """Qdrant points of erased long-term memories (pgvector/SQLite vectors live in the rows themselves)."""
    from memories.longterm.models import EmbeddingIndex, LongTermMemory
    from memories.longterm.services.vectors import QDRANT, backend_named

    pks = sorted(rows.get(LongTermMemory, set()))
    if not pks or not getattr(settings, "QDRANT_URL", ""):
        return 0
    backend = backend_named(QDRANT)
    indexes = list(EmbeddingIndex.objects.filter(backend=QDRANT))
    for index in indexes:
        backend.delete(index, pks)
    return len(pks) if indexes else 0


def delete_working_set(product_id: str, user_id: str, conversation_id: str | None = None) -> int:
    """Every working-set key of the subject: `ws:{product}:{user}:{conversation}:…` (docs/architecture.md)."""
    prefix = f"ws:{product_id}:{user_id}:" + (f"{conversation_id}:" if conversation_id else "")
    delete_pattern = getattr(cache, "delete_pattern", None)
    if delete_pattern is not None:  # django-redis
        return int(delete_pattern(f"{prefix}*") or 0)
    store = getattr(cache, "_cache", None)
    if isinstance(store, dict):  # LocMemCache (the embedded default)
        full = cache.make_key(prefix)
        doomed = [key for key in list(store) if key.startswith(full)]
        with cache._lock:  # type: ignore[attr-defined]
            for key in doomed:
                store.pop(key, None)
                cache._expire_info.pop(key, None)  # type: ignore[attr-defined]
        return len(doomed)
    return 0
