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

from memories.longterm import resident
from memories.longterm.models import EmbeddingIndex, LongTermMemory
from memories.longterm.services import vectors
from memories.longterm.services.embedding_index import index_in_use
from memoryhub.clients.embeddings import get_embedder
from tests.longterm.support import ZH_LANGUAGE, create
from tests.longterm.support import search as search_api
from tests.support.api import assert_envelope
from tests.support.pg_plans import plans_of

pytestmark = [pytest.mark.django_db, pytest.mark.requires_postgres]


def unit(rng: np.random.Generator) -> np.ndarray:
    vector = rng.standard_normal(get_embedder().identity.dimension)  # the configured embedder's (1281-d by default)
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
    """The backend's hits, and which of its plans ran ("exact" or "hnsw")."""
    in_use = index_in_use()
    asked = dict(product_id=product.pk, user_id=user_id, kinds=["preference"], vector=query.tolist())
    found = in_use.backend.search_rows(in_use.index, **asked, limit=limit, offset=offset)
    assert found.live
    return [row.pk for row, _ in found.rows], found.branch


def traced(product, user_id: str, query: np.ndarray) -> tuple[str, list[str]]:
    """The branch and the text of every plan the backend's search ran, the function's inner statements included."""
    in_use = index_in_use()
    asked = dict(product_id=product.pk, user_id=user_id, kinds=["preference"], vector=query.tolist())
    found, plans = plans_of(lambda: in_use.backend.search_rows(in_use.index, **asked, limit=10, offset=0))
    return found.branch, plans


def query_text(plan: str) -> str:
    return plan.split("Query Text:", 1)[1].lstrip()


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


def forced(call):
    """With sequential scans, bitmaps and sorts discouraged: a table this small shows its indexes then."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        try:
            return call()
        finally:
            cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")


def test_the_exact_branch_is_one_statement_on_the_btree_and_never_the_hnsw_index(alice, tenants, rng, monkeypatch):
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 50)
    index_in_use()
    with CaptureQueriesContext(connection) as sent:
        branch, plans = forced(lambda: traced(alice.product, "small", unit(rng)))
    assert branch == "exact"
    searches = [q["sql"] for q in sent.captured_queries if "memoryhub_search_exact(" in q["sql"]]
    assert len(searches) == 1 and not any("hnsw" in q["sql"] for q in sent.captured_queries)  # one round trip
    scans = [plan for plan in plans if "embedding <=> p_query" in query_text(plan)]
    assert len(scans) == 1, plans  # the function's scan ran once
    assert "Index Scan using" in scans[0] and not any("hnsw" in plan for plan in plans), scans[0]


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
    branch, plans = forced(lambda: traced(alice.product, "large", query))
    hnsw = [plan for plan in plans if f"longterm_hnsw_{in_use.index.pk}" in plan]
    assert branch == "hnsw" and len(hnsw) == 1, plans  # the HNSW index itself answers the second statement
    forced_found, _ = forced(lambda: search(alice.product, "large", query))
    assert forced_found == exact(tenants["large"], query, 10)


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


# --- the index a search uses, and where the vectors live ---------------------------------------------------


@pytest.mark.parametrize("held", [False, True], ids=["ranked-in-sql", "held-memories"])
def test_a_search_learns_in_its_own_statement_that_another_process_replaced_the_index(alice, monkeypatch, held):
    """A process keeps the active index it last read; the search statement checks it is still the active one.

    So does the statement that brings a user's held memories up to date (resident.py): when it says the index
    is not the active one, the search goes to SQL, whose statement says why.
    """
    if not held:
        monkeypatch.setattr(resident, "MAX_ROWS", 0)
    record = create(alice, ZH_LANGUAGE)
    assert search_api(alice, "请用简洁的中文回复我", "semantic").json()["results"][0]["id"] == record["id"]
    with CaptureQueriesContext(connection) as sent:  # warm: the index is not read by a query of its own
        assert search_api(alice, "请用简洁的中文回复我", "semantic").status_code == 200
    assert not any(EmbeddingIndex._meta.db_table in q["sql"].split("memoryhub_search_exact")[0] for q in sent)
    assert sum("memoryhub_longterm_refresh(" in q["sql"] for q in sent) == int(held)
    assert sum("memoryhub_search_exact(" in q["sql"] for q in sent) == int(not held)

    # Another process retires it and activates the same identity on another backend, without telling this one.
    old = EmbeddingIndex.objects.get(status="active")
    EmbeddingIndex.objects.filter(pk=old.pk).update(status="retired")
    fields = ("provider", "model", "dimension", "preprocessing", "identity_key")
    other = EmbeddingIndex.objects.create(**{f: getattr(old, f) for f in fields}, backend="qdrant", status="active")
    error = assert_envelope(search_api(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
    assert error["details"]["activeIndex"] == {"identity": old.identity_key, "backend": "qdrant"}

    EmbeddingIndex.objects.filter(pk=other.pk).update(status="retired")  # and back, again behind its back
    EmbeddingIndex.objects.filter(pk=old.pk).update(status="active")
    assert search_api(alice, "请用简洁的中文回复我", "semantic").json()["results"][0]["id"] == record["id"]


def test_vectors_are_stored_in_the_row_not_in_the_toast_table(alice):
    """STORAGE MAIN: reading a user's vectors costs one heap tuple each, not a TOAST lookup (migration 0003)."""
    create(alice, ZH_LANGUAGE)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT attstorage, reltoastrelid::regclass::text FROM pg_attribute JOIN pg_class ON oid = attrelid "
            f"WHERE attrelid = '{vectors.TABLE}'::regclass AND attname = 'embedding'"
        )
        storage, toast = cursor.fetchone()
        cursor.execute(f"SELECT pg_column_size(embedding) FROM {vectors.TABLE} WHERE embedding IS NOT NULL")
        (size,) = cursor.fetchone()
        cursor.execute(f"SELECT count(*) FROM {toast}")
        (chunks,) = cursor.fetchone()
    assert storage == "m" and size > 1500 and chunks == 0  # the default's 1281-d vector (5 KB), inline


def test_the_search_function_answers_every_column_of_a_memory_but_the_vector_and_the_tokens():
    """The function's result columns are written out in migration 0003: a new model field must be added there."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM memoryhub_search_exact(0, '', '', '', '', '{}', '[1]', now(), 1, 0, 1)")
        names = [column.name for column in cursor.description]
    assert names == ["live", "scanned", "distance", *vectors._ROW_COLUMNS]


def test_a_searched_memory_is_the_instance_the_orm_reads(alice, tenants, rng):
    query = unit(rng)
    in_use = index_in_use()
    asked = dict(product_id=alice.product.pk, user_id="small", kinds=["preference"], vector=query.tolist())
    found = in_use.backend.search_rows(in_use.index, **asked, limit=3, offset=0).rows
    for memory, _ in found:
        orm = LongTermMemory.objects.get(pk=memory.pk)
        fields = [f.attname for f in LongTermMemory._meta.concrete_fields]
        assert {f: getattr(memory, f) for f in fields} == {f: getattr(orm, f) for f in fields}  # deferred ones load
        assert memory.product == alice.product and not memory._state.adding and memory._state.db == "default"
        memory.version += 1
        memory.save(update_fields=["version"])  # an instance the ORM can write back
        assert LongTermMemory.objects.get(pk=memory.pk).version == orm.version + 1


@pytest.mark.django_db(transaction=True)
def test_the_hnsw_settings_hold_for_one_search_and_never_stay_with_the_session(alice, rng, monkeypatch):
    """SET LOCAL in the search's own transaction: behind a transaction-pooling PgBouncer nothing leaks."""
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 5)
    rows = add_rows(alice.product, "large", [unit(rng) for _ in range(20)])
    query = unit(rng)
    found, branch = search(alice.product, "large", query)
    assert branch == "hnsw" and found == exact(rows, query, 10)
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        (ef_search,) = cursor.fetchone()
        cursor.execute("SHOW hnsw.iterative_scan")
        (iterative,) = cursor.fetchone()
    assert (ef_search, iterative) == ("40", "off")  # pgvector's defaults: the session was never changed
