"""PostgreSQL history keyword search: BM25 as docs/history.md writes it, on a bounded plan (index, not a scan)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from django.db import connection

from memories.history import selectors
from memories.history.models import HistoryEntry
from memories.history.text import keyword_text
from tests.history.support import imported, message, search
from tests.support.pg_plans import plans_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.requires_postgres]

# Words the english stemmer leaves as they are, so the test can count them in Python.
MESSAGES = [
    message("k1", "user", "violin violin violin lesson today", "2024-03-01T10:00:00Z"),
    message(
        "k2", "assistant", "the violin recital went well and the garden party after it too", "2024-03-01T10:00:05Z"
    ),
    message("k3", "user", "garden garden", "2024-03-02T10:00:00Z"),
    message("k4", "assistant", "nothing about that here", "2024-03-02T10:00:04Z"),
    message("k5", "user", "a recital in the garden", "2024-03-03T10:00:00Z"),
]


def expected_bm25(user: str, terms: list[str]) -> list[tuple[str, float]]:
    """The documented formula in Python over the user's rows: lengths as PostgreSQL counts lexemes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_id, content, length(search_tsv) FROM history_entry WHERE user_id = %s", [user])
        rows = cursor.fetchall()
    n, average = len(rows), sum(length for _, _, length in rows) / len(rows)
    words = {client_id: content.split() for client_id, content, _ in rows}
    df = {term: sum(term in words[client_id] for client_id, _, _ in rows) for term in terms}
    scored = []
    for client_id, _, length in rows:
        score = 0.0
        for term in terms:
            tf = words[client_id].count(term)
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / average))
        if score > 0:
            scored.append((client_id, score))
    return sorted(scored, key=lambda item: -item[1])


@pytest.mark.parametrize("path", ["sql", "resident"])
def test_keyword_order_and_scores_are_bm25_with_term_frequency(alice, request, path):
    if path == "sql":
        request.getfixturevalue("sql_path")
    imported(alice, "u1", "c1", MESSAGES)
    response = search(alice, "u1", "violin garden", "keyword", limit=10)
    assert response.status_code == 200, response.json()
    hits = [(hit["clientId"], hit["score"]) for hit in response.json()["results"]]
    expected = expected_bm25("u1", ["violin", "garden"])
    assert [client_id for client_id, _ in hits] == [client_id for client_id, _ in expected]
    assert [score for _, score in hits] == pytest.approx([score for _, score in expected], rel=1e-6)
    # Term frequency counts: three "violin" outrank one, two "garden" outrank one (same other terms).
    assert hits[0][0] == "k1" and [c for c, _ in hits].index("k3") < [c for c, _ in hits].index("k5")


def test_more_matches_than_candidates_ranks_the_newest(alice, monkeypatch, sql_path):
    monkeypatch.setattr(selectors, "CANDIDATES", 3)
    body = [
        message(f"m{i}", "user", f"garden note {i}" + " garden" * (5 - i), f"2024-01-0{i + 1}T00:00:00Z")
        for i in range(5)
    ]
    imported(alice, "u1", "c1", body)
    found = {hit["clientId"] for hit in search(alice, "u1", "garden", "keyword").json()["results"]}
    assert found == {"m2", "m3", "m4"}  # the two oldest say "garden" most, but only the newest 3 are ranked


def test_keyword_plan_reads_indexes_only_and_a_bounded_number_of_rows(alice, sql_path):
    """At 20,000 messages of one user: a common term is read through the time index backwards, up to the
    candidate limit, and a rare one through the GIN index — never a scan of the table (docs/performance.md)."""
    product = alice.product
    start = datetime(2023, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(20_000):
        content = f"garden day {i}" + (" lighthouse" if i % 5000 == 0 else "")
        when = start + timedelta(minutes=i)
        rows.append(
            HistoryEntry(
                product=product,
                user_id="big",
                conversation_id=f"c{i // 200}",
                client_id=f"m{i}",
                round=i + 1,
                role="user",
                content=content,
                created_at=when,
                search_text=keyword_text(role="user", name="", content=content, created_at=when),
            )
        )
    HistoryEntry.objects.bulk_create(rows, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE history_entry")
    for query, index in (("garden", "history_user_time_idx"), ("lighthouse", "history_entry_tsv_idx")):
        response, plans = plans_of(partial(search, alice, "big", query, "keyword", limit=10))
        assert response.status_code == 200 and response.json()["results"], response.json()
        plan = next(plan for plan in plans if "plainto_tsquery" in plan)
        assert "Seq Scan on history_entry" not in plan, plan
        candidates = plan.split("CTE c")[1]
        assert index in candidates, plan
    assert len(search(alice, "big", "garden", "keyword", limit=100).json()["results"]) == 100
