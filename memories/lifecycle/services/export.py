"""Export everything memoryhub keeps about a user as gzip JSON Lines: a header line, then one record per row.

Every kind is covered generically (the same registry walk as the erasure): a record is
`{"kind": "<app>.<Model>", "id": <pk>, "refs": {<fk field>: <id>}, "data": {<field>: <value>}}`.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import gzip
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from memoryhub import outbox
from memoryhub.errors import Conflict, NotFound
from memoryhub.events import publish as publish_event
from memoryhub.timefmt import iso

from ..models import DONE, FAILED, RUNNING, Export
from . import files
from .walk import chunks, kind_of, user_rows

TASK = "lifecycle.export"
FORMAT = "memoryhub-export"
FORMAT_VERSION = 1
SKIPPED_APPS = {"lifecycle", "webhooks"}  # the export and erasure jobs themselves; messages sent about the user
# Credentials, not the user's data: erased with the user, never exported (nor imported: they name a key).
SKIPPED_MODELS = {"memories.IssuedToolToken"}


def exported(model: type[models.Model]) -> bool:
    return model._meta.app_label not in SKIPPED_APPS and model._meta.label not in SKIPPED_MODELS


def ttl() -> timedelta:
    return timedelta(hours=getattr(settings, "EXPORT_TTL_HOURS", 24))


def export_start(*, product: Any, user_id: str, requested_by: str, schedule: bool = True) -> Export:
    with transaction.atomic():
        export = Export.objects.create(product=product, user_id=user_id, requested_by=requested_by[:200])
        if schedule:
            outbox.schedule(TASK, {"export_id": export.pk}, dedup_key=f"{TASK}:{export.pk}")
    export.refresh_from_db()
    return export


def export_get(*, product: Any, export_id: str) -> Export:
    export = Export.objects.filter(product=product, pk=export_id).first()
    if export is None or (export.expires_at is not None and export.expires_at <= timezone.now()):
        raise NotFound(f"no export {export_id!r}")
    return export


def export_file(*, product: Any, export_id: str):
    """The path of a finished export's file; 409 export_not_ready before it is done."""
    export = export_get(product=product, export_id=export_id)
    if export.status != DONE:
        raise Conflict(f"the export is {export.status}", code="export_not_ready", details={"status": export.status})
    path = files.path_of(export.file_name)
    if not path.exists():
        raise NotFound(f"no export {export_id!r}")
    return export, path


def export_run(*, export_id: str, progress: Callable[[int], None] | None = None) -> Export | None:
    """The job (idempotent: a finished export is not written again)."""
    export = Export.objects.filter(pk=export_id).select_related("product").first()
    if export is None or export.status == DONE:
        return export
    Export.objects.filter(pk=export.pk).update(status=RUNNING)
    name = f"{export.pk}.jsonl.gz"
    try:
        counts = write_export(files.path_of(name), export.product, export.user_id, progress=progress)
    except Exception as exc:
        Export.objects.filter(pk=export.pk).update(status=FAILED, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    now = timezone.now()
    Export.objects.filter(pk=export.pk).update(
        status=DONE,
        counts=counts,
        file_name=name,
        size_bytes=files.path_of(name).stat().st_size,
        finished_at=now,
        expires_at=now + ttl(),
    )
    export.refresh_from_db()
    publish_event(export.product, "export.ready", user=export.user_id, data={"exportId": export.pk})
    return export


def exported_rows(product: Any, user_id: str) -> dict[type[models.Model], set[Any]]:
    rows = user_rows(product, user_id)
    return {m: pks for m, pks in rows.items() if exported(m)}


def write_export(path, product: Any, user_id: str, *, progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write the file (atomically: a temporary name, then rename); answer the counts per kind."""
    rows = exported_rows(product, user_id)
    counts = {kind_of(m): len(pks) for m, pks in sorted(rows.items(), key=lambda item: kind_of(item[0]))}
    header = {
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "product": product.pk,
        "user": user_id,
        "exportedAt": iso(timezone.now()),
        "counts": counts,
    }
    partial = path.with_name(path.name + ".part")
    with gzip.open(partial, "wt", encoding="utf-8") as out:
        out.write(json.dumps(header, ensure_ascii=False) + "\n")
        for record in records(rows):
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            if progress:
                progress(1)
    partial.replace(path)
    return counts


def records(rows: dict[type[models.Model], set[Any]]) -> Iterator[dict]:
    for model in sorted(rows, key=kind_of):
        kind = kind_of(model)
        for batch in chunks(sorted(rows[model], key=str)):
            for row in model._base_manager.filter(pk__in=batch).order_by("pk"):
                yield row_record(kind, row)


def row_record(kind: str, row: models.Model) -> dict:
    refs: dict[str, Any] = {}
    data: dict[str, Any] = {}
    for field in row._meta.concrete_fields:
        if field.primary_key:
            continue
        if field.is_relation:
            refs[field.name] = _json(getattr(row, field.attname))
        else:
            data[field.name] = _json(field.value_from_object(row))
    return {"kind": kind, "id": _json(row.pk), "refs": refs, "data": data}


def _json(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, datetime.datetime):
        return iso(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays (pgvector)
        return value.tolist()
    return str(value)


def delete_expired_exports(*, now: datetime.datetime | None = None) -> int:
    """Delete export files and rows past their expiry (the beat task)."""
    now = now or timezone.now()
    removed = 0
    for export in Export.objects.filter(expires_at__lte=now):
        files.remove(export.file_name)
        export.delete()
        removed += 1
    return removed
