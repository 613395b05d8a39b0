"""gunicorn settings for memoryhub (docs/production.md): `gunicorn -c memoryhub/gunicorn.conf.py`.

Everything comes from the environment, with production-minded defaults:

    GUNICORN_BIND       where to listen (default 127.0.0.1:8000; behind a load balancer use 0.0.0.0:8000)
    WEB_CONCURRENCY     worker processes (default 2 × CPUs + 1, at most 8)
    GUNICORN_TIMEOUT    seconds a request may take before its worker is killed and replaced (default 30)
    GUNICORN_ACCESS_LOG access log path, "-" for stdout (default), "" for none
    PROMETHEUS_MULTIPROC_DIR  where the workers write their metrics so /metrics adds them up (default: a
                        fresh temporary directory, emptied at start-up and removed at exit)

Command-line flags (`--workers 4`, `--bind …`) override these, as usual for gunicorn.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


wsgi_app = "memoryhub.wsgi:application"
bind = [os.environ.get("GUNICORN_BIND", "").strip() or "127.0.0.1:8000"]
workers = _int("WEB_CONCURRENCY", min(2 * (os.cpu_count() or 1) + 1, 8))
worker_class = "sync"  # Django + psycopg are synchronous; one request per process, no thread-safety surprises
timeout = _int("GUNICORN_TIMEOUT", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
keepalive = 5
# Recycling bounds the memory a long-lived worker can accumulate; the jitter keeps workers from restarting together.
max_requests = _int("GUNICORN_MAX_REQUESTS", 5000)
max_requests_jitter = max_requests // 10
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'
errorlog = "-"
control_socket_disable = True  # gunicorn 27's runtime control socket is one path per user: unused here
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")

# --- Prometheus across workers: every worker writes its samples to files in one directory, /metrics merges
# them (memoryhub/api/metrics.py). The variable must be set before any worker imports prometheus_client.
_OWN_METRICS_DIR = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _OWN_METRICS_DIR:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="memoryhub-prometheus-")
METRICS_DIR = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])


PER_WORKER_LIMITS = (
    "REDIS_URL is not set: with %d workers the rate limits are counted per worker (the local-memory cache is "
    "per process), so a key gets up to %d times its limit. Set REDIS_URL to share them (docs/production.md)."
)


def on_starting(server) -> None:
    """Samples of an earlier run would be added to this one's: start from an empty directory."""
    if server.cfg.workers > 1 and not os.environ.get("REDIS_URL", "").strip():
        server.log.warning(PER_WORKER_LIMITS, server.cfg.workers, server.cfg.workers)
    METRICS_DIR.mkdir(parents=True, exist_ok=True)
    for entry in METRICS_DIR.iterdir():
        if entry.is_file() and entry.suffix == ".db":
            entry.unlink()


def worker_abort(worker) -> None:
    """A request past `timeout`: answer it with the envelope, not gunicorn's HTML 500.

    The arbiter sends SIGABRT to a worker whose request has run `timeout` seconds; gunicorn calls this hook from
    the signal handler, inside the request, and would then exit with SystemExit, which its sync worker answers
    with an HTML page. Raising a domain error instead unwinds the request through Django (the transaction rolls
    back; DRF's handler or handler500 writes `503 request_timeout`); the worker then leaves its loop, as after
    the abort, and the arbiter starts a new one. A request blocked in C code that never returns to Python (or
    one that swallows the exception) is still killed by the arbiter's SIGKILL a second later.
    """
    from memoryhub.errors import RequestTimedOut

    timeout = worker.cfg.timeout
    raise RequestTimedOut(
        f"the request took longer than the server's timeout ({timeout} s); its open transaction was rolled back",
        details={"timeoutSeconds": timeout},
    )


def child_exit(server, worker) -> None:
    """A dead (or recycled) worker's live gauges stop counting; its counters stay in the totals."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, str(METRICS_DIR))


def on_exit(server) -> None:
    if _OWN_METRICS_DIR:
        shutil.rmtree(METRICS_DIR, ignore_errors=True)
