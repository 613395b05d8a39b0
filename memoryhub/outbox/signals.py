"""In the worker: a task sent from an outbox row acknowledges the row when it finishes (not when it retries)."""

from __future__ import annotations

import logging

from celery.signals import task_postrun
from django.db import DatabaseError

from .models import pk_from_task_id

logger = logging.getLogger(__name__)
FINAL_STATES = ("SUCCESS", "FAILURE")


@task_postrun.connect(dispatch_uid="memoryhub.outbox.acknowledge")
def acknowledge_outbox_row(task_id: str | None = None, state: str | None = None, **_: object) -> None:
    pk = pk_from_task_id(task_id)
    if pk is None or state not in FINAL_STATES:
        return
    from .services import outbox_acknowledge

    try:
        outbox_acknowledge(pk, state)
    except DatabaseError:  # the row stays pending: the relay sends it again and the task does nothing twice
        logger.warning("outbox: could not acknowledge row %s", pk)
