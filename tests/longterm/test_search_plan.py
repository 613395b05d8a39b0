"""The plan of a pgvector search is chosen deliberately (docs/performance.md, multi-tenant search).

A user with at most `EXACT_SCAN_MAX_ROWS` rows is scanned exactly through the btree (every distance
computed); above it the HNSW index answers with iterative scans. Both must give the exact nearest rows
of that user only, never another user's or product's, and never an expired or superseded one.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.longterm.models import LongTermMemory
from memories.longterm.services import vectors
from memories.longterm.services.embedding_index import index_in_use
from memoryhub.addresses import UserAddress

pytestmark = [pytest.mark.django_db, pytest.mark.requires_postgres]

DIM = 512


def unit(rng: np.random.Generator) -> np.ndarray:
    vector = rng.standard_normal(DIM)
    return vector / np.linalg.norm(vector)


def add_rows(product, user_id: str, vectors_: list[np.ndarray], **fields) -> list[LongTermMemory]:
    in_use = index_in_use()
    rows = [
        LongTermMemory(
            product=product,
            user_id=user_id,
            kind="preference",
            content={"detail": "brief", "text": f"{user_id} #{i}"},
            evidence=f"{user_id} #{i}",
            embedding=vector.tolist(),
            embedding_index=in_use.index,
            **fields,
        )
        for i, vector in enumerate(vectors_)
    ]
    return LongTermMemory.objects.bulk_create(rows)


def exact(rows: list[LongTermMemory], query: np.ndarray, k: int) -> list[int]:
    """The reference: cosine distance of every row in numpy, nearest first (ties by id)."""
    scored = sorted((1.0 - float(np.dot(np.asarray(r.embedding), query)), r.pk) for r in rows)
    return [pk for _, pk in scored[:k]]


def search(product, user_id: str, query: np.ndarray, limit: int = 10, offset: int = 0) -> tuple[list[int], str]:
    in_use = index_in_use()
    with CaptureQueriesContext(connection) as queries:
        hits = in_use.backend.search(
            in_use.index,
            product_id=product.pk,
            user_id=user_id,
            kinds=["preference"],
            vector=query.tolist(),
            limit=limit,
            offset=offset,
        )
    searched = [q["sql"] for q in queries.captured_queries if "<=>" in q["sql"]]
    assert len(searched) == 1
    return [hit.pk for hit in hits], searched[0]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(18)


@pytest.fixture
def tenants(alice, bob, rng):
    """alice's users: `small` (40 rows), `large` (60 rows) and `noise` (200 rows); bob has rows too."""
    made = {
        name: add_rows(alice.product, name, [unit(rng) for _ in range(count)])
        for name, count in (("small", 40), ("large", 60), ("noise", 200))
    }
    add_rows(bob.product, "small", [unit(rng) for _ in range(50)])  # same user id, other product
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {vectors.TABLE}")
    return made


def test_a_user_with_few_rows_is_scanned_exactly_on_the_btree(alice, tenants, rng, monkeypatch):
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 50)
    for _ in range(5):
        query = unit(rng)
        found, sql = search(alice.product, "small", query)
        assert "MATERIALIZED" in sql  # the exact plan
        assert found == exact(tenants["small"], query, 10)
    page_two, _ = search(alice.product, "small", query, limit=10, offset=10)
    assert page_two == exact(tenants["small"], query, 20)[10:]


def test_the_exact_plan_reads_the_btree_and_never_the_hnsw_index(alice, tenants, rng):
    in_use = index_in_use()
    sql = vectors.exact_search_sql(in_use.index, 1)
    params = [vectors.vector_literal(unit(rng)), alice.product.pk, "small", "preference", timezone.now(), 10, 0]
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # a tiny table: make the planner show which index it uses
        try:
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET enable_seqscan")
    assert "longterm_user" in plan and "hnsw" not in plan, plan


def test_above_the_threshold_the_hnsw_plan_gives_the_exact_nearest_rows_of_that_user(alice, tenants, rng, monkeypatch):
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 50)
    for _ in range(5):
        query = unit(rng)
        found, sql = search(alice.product, "large", query)
        assert "MATERIALIZED" not in sql and "ORDER BY distance LIMIT" in sql  # the HNSW plan
        assert found == exact(tenants["large"], query, 10)
    # With the HNSW index forced (the planner prefers the btree on a table this small), still exact here.
    in_use = index_in_use()
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        try:
            cursor.execute(
                f"EXPLAIN {vectors.hnsw_search_sql(in_use.index, 1)}",
                [vectors.vector_literal(query), alice.product.pk, "large", "preference", timezone.now(), 10, 0],
            )
            assert f"longterm_hnsw_{in_use.index.pk}" in "\n".join(r[0] for r in cursor.fetchall())
            forced, _ = search(alice.product, "large", query)
        finally:
            cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")
    assert forced == exact(tenants["large"], query, 10)


def test_the_threshold_is_counted_on_the_users_rows_only(alice, bob, tenants):
    scope = UserAddress(alice.product, "small")
    assert vectors.user_rows_at_most(scope.product.pk, "small", ["preference"], 40)
    assert not vectors.user_rows_at_most(scope.product.pk, "small", ["preference"], 39)
    assert vectors.user_rows_at_most(bob.product.pk, "small", ["preference"], 50)
    assert vectors.user_rows_at_most(alice.product.pk, "nobody", ["preference"], 0)


@pytest.mark.parametrize("threshold", [1000, 10])
def test_both_plans_skip_expired_and_superseded_rows(alice, tenants, rng, monkeypatch, threshold):
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", threshold)
    query = unit(rng)
    nearest = exact(tenants["large"], query, 3)
    past = timezone.now() - timedelta(minutes=1)
    LongTermMemory.objects.filter(pk=nearest[0]).update(expires_at=past)
    LongTermMemory.objects.filter(pk=nearest[1]).update(superseded_by="mem_other")
    found, _ = search(alice.product, "large", query)
    alive = [row for row in tenants["large"] if row.pk not in nearest[:2]]
    assert found == exact(alive, query, 10)
