"""One BLAS thread per process: memoryhub scales by process (gunicorn's workers, Celery's prefork pool).

A request's scans of held rows (memoryhub.held, memories.history.resident_search) multiply a matrix of a few
MB by one vector: memory-bound work one core does in ~0.1 ms. With OpenBLAS's default of one thread per
core, every scan woke the library's workers; beside the machine's other processes a history scan of 1,000
messages took ~6.5 ms instead of ~0.7 (docs/performance.md, "One BLAS thread per process"). The bundled models already
ran on one thread each (use.py, minilm.py; e5/__init__.py gives its engine one OpenMP thread).
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def limit_to_one_thread() -> None:
    """For the rest of the process (threadpool_limits outside a `with` keeps its limit)."""
    threadpool_limits(limits=1, user_api="blas")
