"""Celery tasks of the data lifecycle; every one is idempotent (outbox rows may be delivered twice)."""

from __future__ import annotations

from celery import shared_task

from .services.erasure import erasure_run


@shared_task(name="lifecycle.erase")
def erase(erasure_id: str) -> str:
    erasure = erasure_run(erasure_id=erasure_id)
    return erasure.status if erasure else "missing"


@shared_task(name="lifecycle.export")
def export(export_id: str) -> str:
    from .services.export import export_run

    done = export_run(export_id=export_id)
    return done.status if done else "missing"


@shared_task(name="lifecycle.delete_expired_exports")
def delete_expired_exports() -> int:
    from .services.export import delete_expired_exports as sweep

    return sweep()


@shared_task(name="lifecycle.prune")
def prune() -> dict:
    from .services.retention import prune_all

    return prune_all()


@shared_task(name="lifecycle.import")
def import_file(import_id: str) -> str:
    from .services.imports import import_run

    done = import_run(import_id=import_id)
    return done.status if done else "missing"
