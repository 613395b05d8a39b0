"""Benchmark: long-term keyword and hybrid search on PostgreSQL, and the stored keyword vector against parsing it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> [REDIS_URL=redis://127.0.0.1:6379/<n>] \\
        .venv/bin/python bench/longterm_keyword.py [--tenants 20] [--big 100000] [--repeat 200]

Seeds, in a product of its own, `--tenants` users of 100 preferences each (bench/search.py's synthetic texts,
random unit vectors: embedding is not what is measured) and one user of `--big` preferences (no vectors), then
prints:
  - `memory_search` p50 per mode for the tenants (keyword, semantic, hybrid; the query vectors cached);
  - the BM25 statement (memories.longterm.keyword.bm25_statement) with the stored `search_tsv` (migration
    longterm 0007) and, alternated in the same run, with each row's `to_tsvector('simple', search_text)` parsed
    per search as before it (with the expression GIN index it had, made for the run and dropped after), for a
    tenant and for the big user, and their ratio.
The product and the temporary index are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402
from search import make_texts, tenant_query  # noqa: E402

from memories.longterm import keyword  # noqa: E402
from memories.longterm.models import LongTermMemory  # noqa: E402
from memories.longterm.selectors import TABLE, memory_search  # noqa: E402
from memories.longterm.services.embedding_index import index_in_use  # noqa: E402
from memories.longterm.services.vectors import vector_literal  # noqa: E402
from memories.models import Product  # noqa: E402
from memories.services.products import product_create  # noqa: E402
from memoryhub.addresses import UserAddress  # noqa: E402

PARSED = "to_tsvector('simple'::regconfig, search_text)"
OLD_INDEX = f"CREATE INDEX bench_parsed_keyword_gin ON {TABLE} USING gin ({PARSED})"
BIG_QUERIES = {"rare word": "variant 999", "rare Chinese words": "园艺摄影", "common words": "short answers on tea"}
COLUMNS = (
    "product_id, user_id, memory_id, kind, content, evidence, source, version, search_text, embedding, "
    "embedding_index_id, superseded_by, created_at, updated_at"
)


def seed(product: Product, tenants: int, big: int) -> None:
    """COPY as bench/search.py does: exactly the columns a write stores."""
    in_use = index_in_use()
    texts = make_texts(max(big, tenants * 100))
    rng = np.random.default_rng(1)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {TABLE} ({COLUMNS}) FROM STDIN") as copy:
        for i in range(tenants * 100 + big):
            user, text = (f"tenant-{i // 100}" if i < tenants * 100 else "big"), texts[i % len(texts)]
            vector, index = None, None
            if i < tenants * 100:
                unit = rng.standard_normal(in_use.index.dimension)
                vector, index = vector_literal(list(unit / np.linalg.norm(unit))), in_use.index.pk
            content = json.dumps({"detail": "brief", "text": text}, ensure_ascii=False)
            search_text = keyword.index_text({"text": text}, text)
            copy.write_row((product.pk, user, f"mem_{i:016x}", "preference", content, text, text, 1, search_text,
                            vector, index, "", now, now))  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {TABLE}")


def p50(call, repeat: int) -> float:
    times = []
    for n in range(repeat):
        started = time.perf_counter()
        call(n)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def statement(product: Product, user: str, query: str, vector: str) -> tuple[str, list]:
    where = (
        "product_id = %s AND user_id = %s AND kind IN (%s) AND superseded_by = '' AND rolled_back_at IS NULL "
        "AND (expires_at IS NULL OR expires_at > %s)"
    )
    params = [product.pk, user, "preference", timezone.now()]
    sql, params = keyword.bm25_statement(TABLE, where, params, keyword.query_terms(query), 11, 0)
    return sql.replace(keyword.TSVECTOR_SQL, vector), params


def statement_p50(product: Product, user: str, query: str, vector: str, repeat: int) -> float:
    sql, params = statement(product, user, query, vector)

    def run(_):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            cursor.fetchall()

    return p50(run, repeat)


def report(product: Product, args) -> None:
    users = [UserAddress(product, f"tenant-{n}") for n in range(args.tenants)]
    rng = random.Random(3)
    queries = [tenant_query(text, rng) for text in make_texts(args.tenants * 100)[:: max(1, args.tenants * 2)]]
    in_use = index_in_use()
    for query in queries:
        in_use.embed_query(product.pk, query)  # cached: the embedder is not what is measured
    print(f"tenants: {args.tenants} users × 100 preferences; {len(queries)} queries; load {os.getloadavg()[0]:.2f}")
    for mode in ("keyword", "semantic", "hybrid"):

        def search(n, mode=mode):
            memory_search(users[n % len(users)], mode=mode, query=queries[n % len(queries)], limit=10, cursor=None)

        print(f"  memory_search {mode:8} p50 {p50(search, args.repeat):.2f} ms")
    cases = [("tenant", "tenant-0", queries[0])] + [(f"big user, {k}", "big", q) for k, q in BIG_QUERIES.items()]
    ratios = []
    for label, user, query in cases:
        repeat = args.repeat if user != "big" else max(5, args.repeat // 20)
        parsed, stored = [], []
        for _ in range(3):  # alternated, so that machine noise hits both alike
            parsed.append(statement_p50(product, user, query, PARSED, repeat))
            stored.append(statement_p50(product, user, query, keyword.TSVECTOR_SQL, repeat))
        parsed_ms, stored_ms = statistics.median(parsed), statistics.median(stored)
        ratios.append(stored_ms / parsed_ms)
        print(f"  BM25 statement, {label}: parsed per search {parsed_ms:.2f} ms | stored {stored_ms:.2f} ms "
              f"| stored/parsed {stored_ms / parsed_ms:.2f}")  # fmt: skip
    print(f"LONGTERM keyword BM25 stored/parsed ratio: max {max(ratios):.2f} (lower is better)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    if not settings.IS_POSTGRES:
        raise SystemExit("bench/longterm_keyword.py needs DATABASE_URL pointing at PostgreSQL")
    call_command("migrate", verbosity=0)
    product, _ = product_create(name=f"bench-longterm-keyword-{secrets.token_hex(4)}")
    try:
        seed(product, args.tenants, args.big)
        with connection.cursor() as cursor:
            cursor.execute(OLD_INDEX)
            cursor.execute(f"ANALYZE {TABLE}")
        report(product, args)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS bench_parsed_keyword_gin")
        LongTermMemory.objects.filter(product=product).delete()
        product.delete()


if __name__ == "__main__":
    main()
