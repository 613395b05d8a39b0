"""The plan of a pgvector search is chosen deliberately (docs/performance.md, multi-tenant search).

A user with at most `EXACT_SCAN_MAX_ROWS` rows is scanned exactly through the btree (every distance
computed); above it the HNSW index answers with iterative scans. Both must give the exact nearest rows
of that user only, never another user's or product's, and never an expired or superseded one.
"""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from memories.longterm.models import LongTermMemory
from memories.longterm.services import vectors
from memories.longterm.services.embedding_index import index_in_use

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
    """The backend's hits, and which branch of its one statement ran ("exact" or "hnsw", from EXPLAIN ANALYZE)."""
    in_use = index_in_use()
    asked = dict(product_id=product.pk, user_id=user_id, kinds=["preference"], vector=query.tolist())
    hits = in_use.backend.search(in_use.index, **asked, limit=limit, offset=offset)
    return [hit.pk for hit in hits], branch_run(explain(**asked, limit=limit, offset=offset))


def explain(**asked) -> str:
    in_use = index_in_use()
    sql, params = vectors.search_statement(in_use.index, **asked)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def branch_run(plan: str) -> str:
    """The exact branch ran when the user's rows went through the CTE `mine` (its one-time filter held)."""
    mine = next(line for line in plan.splitlines() if "CTE Scan on mine" in line)
    read = re.search(r"rows=(\d+) loops", mine)
    return "exact" if read and int(read.group(1)) > 0 else "hnsw"


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
        found, branch = search(alice.product, "small", query)
        assert branch == "exact"
        assert found == exact(tenants["small"], query, 10)
    page_two, _ = search(alice.product, "small", query, limit=10, offset=10)
    assert page_two == exact(tenants["small"], query, 20)[10:]


def forced_plan(product, user_id: str, query: np.ndarray) -> str:
    """EXPLAIN with sequential scans, bitmaps and sorts discouraged: a table this small shows its indexes then."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        try:
            return explain(
                product_id=product.pk, user_id=user_id, kinds=["preference"], vector=query, limit=10, offset=0
            )
        finally:
            cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")


def test_the_exact_branch_reads_the_btree_and_never_the_hnsw_index(alice, tenants, rng, monkeypatch):
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 50)
    plan = forced_plan(alice.product, "small", unit(rng))
    mine = plan[plan.index("CTE mine") : plan.index("CTE Scan on mine")]
    assert "Index Scan using" in mine and "hnsw" not in mine, plan  # a btree (on a table this small: any)
    assert branch_run(plan) == "exact"


def test_above_the_threshold_the_hnsw_branch_gives_the_exact_nearest_rows_of_that_user(
    alice, tenants, rng, monkeypatch
):
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 50)
    for _ in range(5):
        query = unit(rng)
        found, branch = search(alice.product, "large", query)
        assert branch == "hnsw"
        assert found == exact(tenants["large"], query, 10)
    in_use = index_in_use()
    plan = forced_plan(alice.product, "large", query)
    assert f"longterm_hnsw_{in_use.index.pk}" in plan and branch_run(plan) == "hnsw", plan
    with connection.cursor() as cursor:  # the HNSW index itself answers (the planner prefers the btree here)
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        try:
            forced, _ = search(alice.product, "large", query)
        finally:
            cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")
    assert forced == exact(tenants["large"], query, 10)


def test_the_threshold_counts_the_users_rows_only(alice, bob, tenants, rng, monkeypatch):
    query = unit(rng)
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 40)  # "small" has 40 rows; bob's "small" 50 more
    assert search(alice.product, "small", query)[1] == "exact"
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 39)
    assert search(alice.product, "small", query)[1] == "hnsw"
    assert search(alice.product, "small", query)[0] == exact(tenants["small"], query, 10)


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
