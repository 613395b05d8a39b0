"""The fault handlers of the suite's Celery worker (memoryhub/faults.py; on only with MEMORYHUB_FAULT_INJECTION=1).

The suite starts `celery -A memoryhub worker --include tests.support.celery_worker`: the product's app
unchanged, which imports this module at start-up.
"""

from __future__ import annotations

from celery.signals import worker_process_init

from memoryhub import faults


@worker_process_init.connect
def _register_fault_handlers(**_: object) -> None:
    # In each pool process, where the tasks run (Django is set up by then: the handlers import models).
    from tests.tables.faults import concurrent_write_when_asked

    faults.register(faults.TABLE_EDITS_BETWEEN_READ_AND_WRITE, concurrent_write_when_asked)
