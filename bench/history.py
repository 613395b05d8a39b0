"""Benchmark: history search at 100,000 messages of one user, and a turn with the history-search source.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> [REDIS_URL=redis://127.0.0.1:6379/<n>] \\
        .venv/bin/python bench/history.py [--messages 100000] [--iterations 200]

Seeds one user with N messages (synthetic sentences of a mixed English/Chinese vocabulary, keyword text as the
index writes it, unit vectors of the active embedding identity's dimension: embedding 100,000 texts with
the bundled model would take longer than the measurement and is not what is measured), builds the HNSW
index, then measures in-process through the HTTP API (Django's test client: routing, authentication,
serialization included) with a warm working set, so the query's embedding is a cache hit (excluded):
  - POST …/history/search, keyword / semantic / hybrid, limit 10: target p50 ≤ 50 ms (hybrid);
  - a turn prepare whose scenario has only the history-search source ≤ 2 × one GET …/memory (interleaved).
The products it creates are deleted at the end, unless --keep: then it prints the product's API key, and
`--api-key KEY` measures that product's messages again without seeding (the HNSW build takes minutes).
`--profile` prints where a hybrid search and a turn spend their time (cProfile, top functions).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # settings refuse to start without one
os.environ.setdefault("MEMORYHUB_RATE_LIMIT", "100000000/min")  # the benchmark is not a rate-limit test

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from memories.history.models import HistoryEntry  # noqa: E402
from memories.history.services.vectors import prepare_hnsw  # noqa: E402
from memories.history.text import keyword_text  # noqa: E402
from memories.longterm.services.embedding_index import index_in_use  # noqa: E402
from memories.models import Product  # noqa: E402
from memories.services.products import api_key_authenticate, product_create  # noqa: E402

USER = "bench-history-user"
WORDS = [
    "garden",
    "violin",
    "recital",
    "lighthouse",
    "kitchen",
    "parrot",
    "vacation",
    "Lisbon",
    "museum",
    "painting",
    "running",
    "marathon",
    "coffee",
    "recipe",
    "sister",
    "brother",
    "school",
    "exam",
    "guitar",
    "concert",
    "hiking",
    "mountain",
    "river",
    "camping",
    "birthday",
    "wedding",
    "puppy",
    "杭州",
    "西湖",
    "龙井",
    "篱笆",
    "花园",
    "音乐会",
    "小提琴",
    "旅行",
    "咖啡",
    "考试",
    "生日",
    "婚礼",
    "小狗",
    "爬山",
    "河流",
    "露营",
    "博物馆",
    "画画",
]
QUERIES = ["How did the violin recital go?", "上次去杭州西湖玩得怎么样", "What recipe did we talk about?"]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))


def seed(product: Product, count: int, dimension: int, index_pk: int, user: str = USER) -> None:
    """`count` messages of `user` in conversations of 200, one a minute from 2023, with random unit vectors."""
    rng, nprng = random.Random(7), np.random.default_rng(7)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    batch: list[HistoryEntry] = []
    for i in range(count):
        content, role = sentence(rng), "user" if i % 2 == 0 else "assistant"
        when = start + timedelta(minutes=i)
        vector = nprng.standard_normal(dimension).astype(np.float32)
        batch.append(
            HistoryEntry(
                product=product,
                user_id=user,
                conversation_id=f"c{i // 200}",
                client_id=f"m{i}",
                round=(i % 200) // 2 + 1,
                role=role,
                content=content,
                created_at=when,
                search_text=keyword_text(role=role, name="", content=content, created_at=when),
                embedding=vector / np.linalg.norm(vector),
                embedding_index_id=index_pk,
            )
        )
        if len(batch) == 5000:
            HistoryEntry.objects.bulk_create(batch)
            batch = []
            print(f"  seeded {i + 1}", file=sys.stderr)
    HistoryEntry.objects.bulk_create(batch)


def timed(call) -> float:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code in (200, 201), response.content[:300]
    return elapsed


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    return f"p50 {statistics.median(ordered):6.1f} ms  p95 {ordered[int(0.95 * (len(ordered) - 1))]:6.1f} ms"


def profiled(label: str, call, count: int = 50) -> None:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(count):
        call()
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(35)
    print(f"--- profile: {label} ({count} calls)\n{out.getvalue()}")


def seeded_product(count: int) -> tuple[Product, str]:
    product, issued = product_create(name=f"bench-history-{secrets.token_hex(3)}")
    in_use = index_in_use()
    started = time.perf_counter()
    seed(product, count, in_use.index.dimension, in_use.index.pk)
    prepare_hnsw(in_use.index)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE history_entry") if connection.vendor == "postgresql" else None
    print(f"seeded and indexed in {time.perf_counter() - started:.0f} s")
    return product, issued.plaintext


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="leave the product and its messages; print its key")
    parser.add_argument("--api-key", help="measure the messages of a product kept by --keep (no seeding)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    if args.api_key:
        found = api_key_authenticate(args.api_key)
        assert found is not None, "unknown API key"
        product, key = found.product, args.api_key
    else:
        product, key = seeded_product(args.messages)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    messages = HistoryEntry.objects.filter(product=product, user_id=USER).count()
    print(f"database {connection.vendor}; embedder {index_in_use().embedder.identity.key}; {messages} messages")
    try:
        search = f"/v1/users/{USER}/history/search"
        for query in QUERIES:  # warm: the query vectors are in the working set from here on
            client.post(search, {"query": query, "mode": "semantic"}, format="json")
        results = {}
        for mode in ("keyword", "semantic", "hybrid"):
            samples = [
                timed(lambda q=q, m=mode: client.post(search, {"query": q, "mode": m, "limit": 10}, format="json"))
                for i in range(args.iterations)
                for q in [QUERIES[i % len(QUERIES)]]
            ]
            results[mode] = statistics.median(samples)
            print(f"history search {mode:>8}, {messages} messages: {summary(samples)}")
        body = {
            "id": "bench-history",
            "name": "Bench history",
            "memorySources": [{"id": "past", "agentRef": "history-search", "variable": "recalledHistory"}],
            "template": "{{recalledHistory}}\nUser: {{userMessage}}",
        }
        assert client.post("/v1/scenarios", body, format="json").status_code in (201, 409)  # 409: a kept product
        conversation = f"/v1/users/{USER}/conversations/bench-now"
        if client.get(f"{conversation}/memory").status_code == 404:
            put = client.put(f"{conversation}/memory", {"expectedRevision": 0, "memory": {"a": 1}}, format="json")
            assert put.status_code == 200
        turn = {"scenarioId": "bench-history", "userMessage": QUERIES[0]}
        prepares, gets = [], []
        for _ in range(30):  # warm both paths
            client.post(f"{conversation}/turns", turn, format="json")
            client.get(f"{conversation}/memory")
        for _ in range(args.iterations):
            prepares.append(timed(lambda: client.post(f"{conversation}/turns", turn, format="json")))
            gets.append(timed(lambda: client.get(f"{conversation}/memory")))
        ratio = statistics.median(prepares) / statistics.median(gets)
        if args.profile:
            hybrid = {"query": QUERIES[0], "mode": "hybrid", "limit": 10}
            profiled("hybrid search", lambda: client.post(search, hybrid, format="json"))
            profiled("turn prepare", lambda: client.post(f"{conversation}/turns", turn, format="json"))
        print(f"turn prepare with history-search: {summary(prepares)}")
        print(f"GET …/memory:                     {summary(gets)}")
        print(
            f"HISTORY search hybrid p50={results['hybrid']:.1f} ms (target ≤ 50) at {messages} messages; "
            f"turn/GET memory p50 ratio={ratio:.2f} (target ≤ 2)"
        )
        return 0
    finally:
        if args.keep or args.api_key:
            print(f"kept: --api-key {key}")
        else:
            HistoryEntry.objects.filter(product=product).delete()
            Product.objects.filter(pk=product.pk).delete()


if __name__ == "__main__":
    sys.exit(main())
