"""Import an export file into a user of this (or another) product: ids re-mapped, admission not re-run.

Records are restored generically, kind by kind in foreign-key order: the product and user become the target's,
foreign keys to imported rows point at their new ids, foreign keys to rows outside the file (a scenario, an
embedding index) are kept when the row exists in the target product, else cleared when nullable, else the
record is skipped and reported.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.db import models, transaction
from django.utils import timezone

from memoryhub import outbox
from memoryhub.errors import InvalidRequest, NotFound

from ..models import DONE, FAILED, RUNNING, Import
from . import files
from .erasure import delete_working_set
from .export import FORMAT, FORMAT_VERSION, exported

TASK = "lifecycle.import"


def read_export(content: bytes) -> tuple[dict, list[dict]]:
    try:
        text = gzip.decompress(content).decode("utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"not a gzip JSON Lines export file: {exc}", code="invalid_export") from exc
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != FORMAT:
        raise InvalidRequest("the first line is not a memoryhub export header", code="invalid_export")
    if lines[0].get("formatVersion") != FORMAT_VERSION:
        raise InvalidRequest(f"unsupported formatVersion {lines[0].get('formatVersion')!r}", code="invalid_export")
    return lines[0], lines[1:]


def _model(kind: str) -> type[models.Model] | None:
    try:
        model = apps.get_model(kind)
    except (LookupError, ValueError):
        return None
    return model if exported(model) else None


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
        visiting.discard(kind)
        ordered.append(kind)

    for kind in sorted(present):
        visit(kind)
    return ordered


def import_records(*, product: Any, user_id: str, records: list[dict]) -> dict:
    """Restore the records into (product, user_id) in one transaction; answer the report."""
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if isinstance(record, dict) and isinstance(record.get("kind"), str):
            by_kind[record["kind"]].append(record)
    ids: dict[str, dict[str, Any]] = defaultdict(dict)  # kind → old id (as str) → new pk
    imported: dict[str, int] = {}
    skipped: dict[str, int] = {}
    reasons: list[str] = []
    unknown = sorted(kind for kind in by_kind if _model(kind) is None)
    with transaction.atomic():
        for kind in _order(by_kind):
            model = _model(kind)
            assert model is not None
            for record in sorted(by_kind[kind], key=lambda r: _sort_key(r.get("id"))):
                row, reason = _restore(model, record, product, user_id, ids)
                if row is None:
                    skipped[kind] = skipped.get(kind, 0) + 1
                    if len(reasons) < 20:
                        reasons.append(f"{kind} {record.get('id')}: {reason}")
                    continue
                ids[kind][str(record.get("id"))] = row.pk
                imported[kind] = imported.get(kind, 0) + 1
    delete_working_set(product.pk, user_id)
    return {"imported": imported, "skipped": skipped, "unknownKinds": unknown, "reasons": reasons}


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int) else (1, str(value))


def _restore(
    model: type[models.Model], record: dict, product: Any, user_id: str, ids: dict[str, dict[str, Any]]
) -> tuple[models.Model | None, str]:
    data = record.get("data") or {}
    refs = record.get("refs") or {}
    values: dict[str, Any] = {}
    for field in model._meta.concrete_fields:
        if field.primary_key:
            if not (isinstance(field, models.AutoField) or field.has_default()):
                values[field.name] = record.get("id")  # a natural key: kept
            continue
        if field.is_relation and field.related_model is not None:
            target: type[models.Model] = field.related_model
            old = refs.get(field.name)
            if target._meta.label == "memories.Product":
                values[field.name] = product
            elif old is None:
                values[field.attname] = None
            elif str(old) in ids.get(target._meta.label, {}):
                values[field.attname] = ids[target._meta.label][str(old)]
            elif _exists_in(target, old, product):
                values[field.attname] = old
            elif (match := _same_slug(target, data.get(f"{field.name}_slug"), product)) is not None:
                values[field.attname] = match  # e.g. a turn's scenario, by its id (slug) in the target product
            elif field.null:
                values[field.attname] = None
            else:
                return None, f"{field.name} points at {target._meta.label} {old}, which the target does not have"
            continue
        if field.name == "user_id":
            values[field.name] = user_id
        elif field.name in data:
            try:
                values[field.name] = field.to_python(data[field.name]) if data[field.name] is not None else None
            except Exception as exc:  # a value the field refuses
                return None, f"{field.name}: {exc}"
    try:
        with transaction.atomic():
            row = model(**values)
            row.save(force_insert=True)
    except Exception as exc:  # a constraint of the target (e.g. the user already has this document)
        return None, f"{type(exc).__name__}: {exc}"[:300]
    return row, ""


def _exists_in(target: type[models.Model], pk: Any, product: Any) -> bool:
    queryset = target._base_manager.filter(pk=pk)
    if any(f.name == "product" for f in target._meta.concrete_fields):
        queryset = queryset.filter(product=product)
    return queryset.exists()


def import_start(*, product: Any, user_id: str, content: bytes, requested_by: str, schedule: bool = True) -> Import:
    """Check the header now (400 invalid_export), keep the file, and schedule the job through the outbox."""
    read_export(content)
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
        _, lines = read_export(files.path_of(job.file_name).read_bytes())
        report = import_records(product=job.product, user_id=job.user_id, records=lines)
    except Exception as exc:
        Import.objects.filter(pk=job.pk).update(
            status=FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now()
        )
        files.remove(job.file_name)
        raise
    Import.objects.filter(pk=job.pk).update(status=DONE, report=report, finished_at=timezone.now())
    files.remove(job.file_name)
    job.refresh_from_db()
    return job


def _same_slug(target: type[models.Model], slug: Any, product: Any) -> Any:
    names = {f.name for f in target._meta.concrete_fields}
    if not isinstance(slug, str) or not {"slug", "product"} <= names:
        return None
    return target._base_manager.filter(product=product, slug=slug).values_list("pk", flat=True).first()
