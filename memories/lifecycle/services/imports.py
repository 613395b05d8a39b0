"""Import an export file into a user of this (or another) product: ids re-mapped, every value checked.

Only the allow-listed kinds of import_rules are restored, kind by kind in foreign-key order: the product and
user become the target's, foreign keys to imported rows point at their new ids, foreign keys to rows outside
the file (a scenario) are kept when the row exists in the target product and belongs to the same user, else
matched by slug, else cleared when nullable, else the record is skipped and reported. The file is streamed
(import_file), never decompressed whole.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.db import DatabaseError, IntegrityError, models, transaction
from django.utils import timezone

from memoryhub import outbox
from memoryhub.actors import Actor
from memoryhub.clients.errors import UpstreamError
from memoryhub.errors import DomainError, NotFound

from ..models import DONE, FAILED, RUNNING, Import
from . import files
from .erasure import delete_working_set
from .import_file import check_export, records_of
from .import_rules import ID_REFERENCES, ImportContext, RecordRefused, check_record, importable

TASK = "lifecycle.import"
logger = logging.getLogger(__name__)
MAX_REASONS = 20


def _model(kind: str) -> type[models.Model] | None:
    """The model of an importable kind; None for every other name (users, outbox, products, … included)."""
    if not importable(kind):
        return None
    return apps.get_model(kind)


def _order(kinds: Iterable[str]) -> list[str]:
    """Kinds sorted so that a kind comes after every other kind it points at."""
    present = {kind: m for kind in kinds if (m := _model(kind)) is not None}
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(kind: str) -> None:
        if kind in ordered or kind in visiting:
            return
        visiting.add(kind)
        for field in present[kind]._meta.concrete_fields:
            target = field.related_model if field.is_relation else None
            if target is not None and target._meta.label in present and target._meta.label != kind:
                visit(target._meta.label)
        for label in ID_REFERENCES.get(kind, ()):  # ids held in a plain column, re-mapped by the kind's check
            if label in present:
                visit(label)
        visiting.discard(kind)
        ordered.append(kind)

    for kind in sorted(present):
        visit(kind)
    return ordered


def _kinds_in(content: bytes) -> tuple[set[str], list[str]]:
    """The importable kinds the file holds, and every other kind it names (the report's unknownKinds)."""
    present: set[str] = set()
    unknown: set[str] = set()
    for record in records_of(content):
        kind = record.get("kind") if isinstance(record, dict) else None
        if isinstance(kind, str):
            (present if importable(kind) else unknown).add(kind)
    return present, sorted(unknown)


def _records_of_kind(content: bytes, kind: str) -> list[dict]:
    """One kind's records, in id order (a pass over the streamed file: only one kind is held at a time)."""
    found = [r for r in records_of(content) if isinstance(r, dict) and r.get("kind") == kind]
    return sorted(found, key=lambda r: _sort_key(r.get("id")))


def import_records(*, product: Any, user_id: str, content: bytes, importer: Actor) -> dict:
    """Restore the file's records into (product, user_id) in one transaction; answer the report."""
    present, unknown = _kinds_in(content)
    ids: dict[str, dict[str, Any]] = defaultdict(dict)  # kind → old id (as str) → new pk
    imported: dict[str, int] = {}
    skipped: dict[str, int] = {}
    reasons: list[str] = []
    context = ImportContext(product=product, user_id=user_id, ids=ids, importer=importer)
    with transaction.atomic():
        for kind in _order(present):
            model = _model(kind)
            assert model is not None
            for record in _records_of_kind(content, kind):
                try:
                    row = _restore(model, record, context, ids)
                except RecordRefused as refused:
                    _remember_refused(kind, record, context)
                    skipped[kind] = skipped.get(kind, 0) + 1
                    if len(reasons) < MAX_REASONS:
                        reasons.append(f"{kind} {str(record.get('id'))[:40]}: {refused}"[:300])
                    continue
                ids[kind][str(record.get("id"))] = row.pk
                imported[kind] = imported.get(kind, 0) + 1
    delete_working_set(product.pk, user_id)
    return {"imported": imported, "skipped": skipped, "unknownKinds": unknown, "reasons": reasons}


# Rows of a conversation that point at it by its id, not by a key: kept once, with the conversation.
_BY_CONVERSATION_ID = frozenset({"memories.Event", "history.HistoryEntry"})
# A user's log rows with no key of their own (their time is the import's): one equal in these fields is the same.
_LOGGED_ONCE = {
    "longterm.AdmissionRefusal": ("kind", "code", "reason", "operation_id", "memory_id", "evidence", "actor"),
}


def _remember_refused(kind: str, record: dict, context: ImportContext) -> None:
    context.refused.setdefault(kind, set()).add(str(record.get("id")))
    data = record.get("data")
    if kind == "memories.Conversation" and isinstance(data, dict):
        context.refused_conversations.add(str(data.get("conversation_id")))


def _integrity_reason(error: IntegrityError) -> str:
    """Which rule the database applied, in our words (never its own: they name tables and SQL)."""
    code = getattr(error.__cause__, "sqlstate", None)
    text = str(error).upper()
    if code == "23505" or "UNIQUE" in text:
        return "conflicts with a row the target already has (a unique key)"
    if code == "23502" or "NOT NULL" in text:
        return "a required value is missing"
    if code == "23503" or "FOREIGN KEY" in text:
        return "points at a row the target does not have"
    return "a value breaks a rule of the database (a check)"


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int) and not isinstance(value, bool) else (1, str(value))


def _restore(model: type[models.Model], record: dict, context: ImportContext, ids: dict[str, dict[str, Any]]):
    data: dict = record["data"] if isinstance(record.get("data"), dict) else {}
    refs: dict = record["refs"] if isinstance(record.get("refs"), dict) else {}
    values: dict[str, Any] = {}
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue  # every importable kind has a generated key: the file's id only maps references
        if field.is_relation and field.related_model is not None:
            values[field.attname] = _reference(field, refs.get(field.name), data, context, ids)
        elif field.name == "user_id":
            values[field.name] = context.user_id
        elif field.name in data:
            values[field.name] = _value(field, data[field.name])
    context.after_save.clear()  # hooks are per record: check_record adds this record's own
    label = model._meta.label
    if label in _BY_CONVERSATION_ID and str(values.get("conversation_id")) in context.refused_conversations:
        raise RecordRefused("its conversation was not restored (e.g. the target has it already)")
    check_record(model, values, context)
    if (fields := _LOGGED_ONCE.get(label)) is not None:  # as checked: an operator's refusal is the importer's
        same = {name: values.get(name, "") for name in fields}
        if model._base_manager.filter(product=context.product, user_id=context.user_id, **same).exists():
            raise RecordRefused("the target has this record already")
    try:
        with transaction.atomic():
            row = model(**values)
            row.save(force_insert=True)
            _keep_exported_times(row, values)
    except IntegrityError as error:
        raise RecordRefused(_integrity_reason(error)) from None
    except DatabaseError:  # never the database's own words: they name tables and SQL
        raise RecordRefused("the database refused the record") from None
    for hook in context.after_save:
        hook(row)
    return row


def _keep_exported_times(row: models.Model, values: dict[str, Any]) -> None:
    """A record keeps the times it was exported with: `save` stamps `auto_now(_add)` fields with the import's."""
    stamped = {
        field.attname: values[field.attname]
        for field in row._meta.concrete_fields
        if (getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False))
        and values.get(field.attname) is not None
    }
    if stamped:
        type(row)._base_manager.filter(pk=row.pk).update(**stamped)
        for attname, value in stamped.items():
            setattr(row, attname, value)


def _value(field: models.Field, raw: Any) -> Any:
    if raw is None:
        return None
    try:
        return field.to_python(raw)
    except Exception:  # a value the field refuses (the message may echo it whole)
        raise RecordRefused(f"{field.name}: not a valid {field.get_internal_type()}") from None


def _reference(field: models.Field, old: Any, data: dict, context: ImportContext, ids: dict[str, dict[str, Any]]):
    """The new value of a foreign key: the target product, a re-mapped id, the user's own row, a slug, or None."""
    target: type[models.Model] = field.related_model  # type: ignore[assignment]
    label = target._meta.label
    if label == "memories.Product":
        return context.product.pk
    if old is None:
        return None
    if str(old) in ids.get(label, {}):
        return ids[label][str(old)]
    if str(old) in context.refused.get(label, ()):  # the file's own row, not restored: neither is what hangs off it
        raise RecordRefused(f"{field.name} points at {label} {str(old)[:40]} of the file, which was not restored")
    if _owned_by(target, old, context):
        return old
    if (match := _same_slug(target, data.get(f"{field.name}_slug"), context.product)) is not None:
        return match  # e.g. a turn's scenario, by its id (slug) in the target product
    if field.null:
        return None
    raise RecordRefused(f"{field.name} points at {label} {str(old)[:40]}, which the target does not have")


def _owned_by(target: type[models.Model], pk: Any, context: ImportContext) -> bool:
    """A row outside the file may be referenced only when it is the target product's (and user's, if per user)."""
    names = {f.name for f in target._meta.concrete_fields}
    if "product" not in names:
        return False  # e.g. an embedding index: service state, derived again by the checks, never referenced
    queryset = target._base_manager.filter(product=context.product)
    if "user_id" in names:
        queryset = queryset.filter(user_id=context.user_id)
    try:
        return queryset.filter(pk=pk).exists()
    except (ValueError, TypeError, DatabaseError):  # not a key of that model at all
        return False


def import_start(*, product: Any, user_id: str, content: bytes, requested_by: str, schedule: bool = True) -> Import:
    """Check the whole file now (400 invalid_export, 413 import_too_large), keep it, schedule the job."""
    check_export(content)
    with transaction.atomic():
        job = Import.objects.create(product=product, user_id=user_id, requested_by=requested_by[:200])
        job.file_name = f"{job.pk}.import.jsonl.gz"
        files.path_of(job.file_name).write_bytes(content)
        job.save(update_fields=["file_name"])
        if schedule:
            outbox.schedule(TASK, {"import_id": job.pk}, dedup_key=f"{TASK}:{job.pk}")
    job.refresh_from_db()
    return job


def import_get(*, product: Any, import_id: str) -> Import:
    job = Import.objects.filter(product=product, pk=import_id).first()
    if job is None:
        raise NotFound(f"no import {import_id!r}")
    return job


def import_run(*, import_id: str) -> Import | None:
    """The job (idempotent: a finished import is not run again; the import itself is one transaction)."""
    job = Import.objects.filter(pk=import_id).select_related("product").first()
    if job is None or job.status in (DONE, FAILED):
        return job
    Import.objects.filter(pk=job.pk).update(status=RUNNING)
    try:
        report = import_records(
            product=job.product,
            user_id=job.user_id,
            content=files.path_of(job.file_name).read_bytes(),
            importer=Actor.parse(job.requested_by),
        )
    except Exception as exc:
        Import.objects.filter(pk=job.pk).update(status=FAILED, error=_failure(exc), finished_at=timezone.now())
        files.remove(job.file_name)
        raise
    Import.objects.filter(pk=job.pk).update(status=DONE, report=report, finished_at=timezone.now())
    files.remove(job.file_name)
    job.refresh_from_db()
    return job


def _failure(exc: Exception) -> str:
    """What a failed job says: a domain error's message (e.g. 503 embedding_index_mismatch), never SQL text."""
    if isinstance(exc, (DomainError, UpstreamError)):
        return f"{exc.code}: {exc.message}"[:2000]
    logger.exception("import failed")
    return f"{type(exc).__name__} (the worker's log has the details)"


def _same_slug(target: type[models.Model], slug: Any, product: Any) -> Any:
    names = {f.name for f in target._meta.concrete_fields}
    if not isinstance(slug, str) or not {"slug", "product"} <= names:
        return None
    return target._base_manager.filter(product=product, slug=slug).values_list("pk", flat=True).first()
