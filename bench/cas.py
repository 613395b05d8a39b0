"""Median cost of one compare-and-set memory write on PostgreSQL, three ways, interleaved in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/cas.py [--n 2000]

(a) a raw `UPDATE … SET revision = revision + 1, memory = … WHERE … AND revision = %s` with psycopg,
(b) memoryhub's service function `memory_document_replace`,
(c) the HTTP API (`PUT …/memory` through Django's test client, every middleware included).

Each path writes its own row; one iteration times one write of each, in a rotating order, so machine
noise hits all three alike. The benchmark uses its own database `memoryhub_bench_cas` on the server
named by DATABASE_URL (created and migrated afresh for every run, dropped at the end). The cache is
whatever the environment configures (REDIS_URL → Redis, else the local-memory cache); the output says which.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "memoryhub_bench_cas"  # its own: bench/search.py drops and recreates memoryhub_bench
TARGET_SERVICE_RATIO = 2.0
TARGET_HTTP_RATIO = 5.0  # issue 18: the whole HTTP PUT within 5 × the bare statement
PATHS = ("raw", "service", "http")
LABELS = {
    "raw": "(a) raw psycopg UPDATE",
    "service": "(b) memory_document_replace",
    "http": "(c) HTTP API PUT",
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="timed writes per path (default 2000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed writes per path first (default 100)")
    parser.add_argument("--memory-bytes", type=int, default=1024, help="approximate document size (default 1024)")
    parser.add_argument(
        "--synchronous-commit",
        choices=("on", "off"),
        default="on",
        help="'off' takes the WAL flush out of every path, leaving round trips and CPU (default on)",
    )
    return parser.parse_args()


def bench_database_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        sys.exit("bench/cas.py measures PostgreSQL: set DATABASE_URL=postgres://user@host:port/any-database")
    return urlunsplit(parts._replace(path=f"/{BENCH_DB}"))


def _server_connection(url: str):
    import psycopg

    return psycopg.connect(urlunsplit(urlsplit(url)._replace(path="/postgres")), autocommit=True)


def recreate_database(url: str) -> None:
    """A fresh `memoryhub_bench_cas` per run: no schema drift from earlier runs, no rows from them either."""
    from psycopg import sql

    with _server_connection(url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))


def drop_database(url: str) -> None:
    from django.db import connections
    from psycopg import sql

    connections.close_all()
    with _server_connection(url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # settings refuse to start without one
    os.environ["MEMORYHUB_RATE_LIMIT"] = "1000000000/s"  # measure the write, not the rate limiter refusing it
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def document(i: int, size: int) -> dict:
    return {"counter": i, "mood": "平静", "notes": ("记忆" * size)[: max(size // 3, 1)]}


class Writers:
    """One row per path; each `write_*` performs one compare-and-set and checks it won."""

    def __init__(self, size: int):
        import psycopg
        from django.test import Client

        from memories.services.products import product_create
        from memoryhub.actors import Actor
        from memoryhub.addresses import ConversationAddress

        self.size = size
        self.product, issued = product_create(name=f"cas-bench {time.strftime('%Y-%m-%d %H:%M:%S')}")
        run = f"run-{time.time_ns()}"
        self.address = ConversationAddress(self.product, "bench-service", run)
        self.actor = Actor("api_key", issued.api_key.prefix)
        self.http_url = f"/v1/users/bench-http/conversations/{run}/memory"
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
        self.raw = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        self.raw_key = (self.product.pk, "bench-raw", run)
        self.revisions = dict.fromkeys(PATHS, 0)
        self._create_raw_row()

    def set_synchronous_commit(self, value: str) -> None:
        from django.db import connection

        self.raw.execute(f"SET synchronous_commit = {value}")
        with connection.cursor() as cursor:
            cursor.execute(f"SET synchronous_commit = {value}")

    def _create_raw_row(self) -> None:
        from memories.services.documents import memory_document_replace
        from memoryhub.addresses import ConversationAddress

        address = ConversationAddress(self.product, *self.raw_key[1:])
        memory_document_replace(address=address, expected_revision=0, memory=document(0, self.size), actor=self.actor)
        self.revisions["raw"] = 1

    def write_raw(self, i: int) -> None:
        from memories.models import MemoryDocument
        from memories.validation import compact_json

        expected = self.revisions["raw"]
        cursor = self.raw.execute(
            f"UPDATE {MemoryDocument._meta.db_table} SET revision = revision + 1, memory = %s::jsonb"
            " WHERE product_id = %s AND user_id = %s AND conversation_id = %s AND revision = %s",
            (compact_json(document(i, self.size)), *self.raw_key, expected),
        )
        assert cursor.rowcount == 1, "raw CAS lost"
        self.revisions["raw"] = expected + 1

    def write_service(self, i: int) -> None:
        from memories.services.documents import memory_document_replace

        expected = self.revisions["service"]
        new = memory_document_replace(
            address=self.address, expected_revision=expected, memory=document(i, self.size), actor=self.actor
        )
        assert new == expected + 1, "service CAS lost"
        self.revisions["service"] = new

    def write_http(self, i: int) -> None:
        expected = self.revisions["http"]
        body = {"expectedRevision": expected, "memory": document(i, self.size)}
        response = self.client.put(self.http_url, body, content_type="application/json")
        assert response.status_code == 200, (response.status_code, response.content[:300])
        self.revisions["http"] = expected + 1

    def write(self, path: str, i: int) -> None:
        getattr(self, f"write_{path}")(i)

    def before(self, path: str) -> None:
        """Untimed set-up: the (c) requests reset Django's per-request connection health check, so the
        next service call would pay its `SELECT 1`; in production that check belongs to the request (c)."""
        if path == "service":
            from django.db import connection

            connection.close_if_health_check_failed()


def run(writers: Writers, n: int, warmup: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {path: [] for path in PATHS}
    for i in range(warmup + n):
        shift = i % len(PATHS)
        for path in PATHS[shift:] + PATHS[:shift]:  # rotate the order: no path always runs first
            writers.before(path)
            started = time.perf_counter_ns()
            writers.write(path, i)
            elapsed = (time.perf_counter_ns() - started) / 1e6
            if i >= warmup:
                timings[path].append(elapsed)
    return timings


def statements(write) -> list[str]:
    """The SQL that one write issues through Django's connection, as Django logs it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        write()
    return [" ".join(query["sql"].split())[:100] for query in captured.captured_queries]


def environment() -> str:
    import platform

    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
        cursor.execute("SHOW synchronous_commit")  # this session's value, as set by --synchronous-commit
        sync = cursor.fetchone()[0]
    cache = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    return (
        f"PostgreSQL {server} (synchronous_commit={sync}) at {connection.settings_dict['HOST']}:"
        f"{connection.settings_dict['PORT']}/{BENCH_DB}; cache {cache}; Python {platform.python_version()};"
        f" {os.cpu_count()} CPUs; {platform.platform()}"
    )


def report(timings: dict[str, list[float]], n: int, issued: dict[str, list[str]]) -> None:
    medians = {path: statistics.median(values) for path, values in timings.items()}
    print(f"memoryhub CAS bench — {n} timed writes per path, interleaved, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(environment())
    for path in PATHS:
        values = sorted(timings[path])
        p10, p90 = values[len(values) // 10], values[len(values) * 9 // 10]
        print(f"  {LABELS[path]:30} median {medians[path]:7.3f} ms   p10 {p10:7.3f} ms   p90 {p90:7.3f} ms")
    service_ratio = medians["service"] / medians["raw"]
    verdict = "" if service_ratio <= TARGET_SERVICE_RATIO else "   ABOVE TARGET"
    print(f"  (b)/(a) = {service_ratio:.3f}   (target <= {TARGET_SERVICE_RATIO}){verdict}")
    http_ratio = medians["http"] / medians["raw"]
    verdict = "" if http_ratio <= TARGET_HTTP_RATIO else "   ABOVE TARGET"
    print(f"  (c)/(a) = {http_ratio:.3f}   (HTTP PUT ÷ raw SQL, target <= {TARGET_HTTP_RATIO}){verdict}")
    for path, sql in issued.items():
        print(f"SQL issued by one {LABELS[path]} write ({len(sql)} statements):")
        for statement in sql:
            print(f"    {statement}")


def main() -> None:
    args = parse_args()
    url = bench_database_url()
    recreate_database(url)
    setup_django(url)
    writers = None
    try:
        writers = Writers(args.memory_bytes)
        writers.set_synchronous_commit(args.synchronous_commit)
        timings = run(writers, args.n, args.warmup)
        issued = {path: statements(lambda path=path: writers.write(path, -1)) for path in ("service", "http")}
        report(timings, args.n, issued)
    finally:
        if writers is not None:
            writers.raw.close()
        drop_database(url)


if __name__ == "__main__":
    main()
