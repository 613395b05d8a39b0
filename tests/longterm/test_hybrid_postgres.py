"""PostgreSQL: hybrid search reads both rankings in one statement (memories/longterm/hybrid_postgres.py), or
ranks the user's memories held in this process (memories/longterm/resident.py), and either answers exactly what
the keyword and semantic searches fused would answer."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.longterm import hybrid_postgres, resident
from memories.longterm.services import vectors
from tests.longterm.support import create, proposal, search

pytestmark = [pytest.mark.django_db, pytest.mark.requires_postgres]

TEXTS = [
    "用户喜欢简短的中文回答",
    "回答时先给结论，再用中文解释",
    "用户希望用中文讨论咖啡和茶",
    "用户喜欢分点列出的中文总结",
    "Please always answer me in detailed English",
    "Short English answers about coffee, please",
    "Explain databases with examples, in English",
    "I like bullet-point summaries of my running plans",
]
QUERIES = ["中文回答", "请用简洁的中文回复我", "coffee", "answers in English please", "总结 summaries", "天气"]


@pytest.fixture
def memories(alice):
    return [create(alice, proposal(content={"language": "zh", "text": text}))["id"] for text in TEXTS]


def pages(api, query: str, **extra) -> list[dict]:
    """Every page of a hybrid search, two results at a time, following the cursor."""
    found, cursor = [], None
    while True:
        body = search(api, query, "hybrid", limit=2, **extra, **({"cursor": cursor} if cursor else {})).json()
        found.append({k: body[k] for k in ("results", "next", "embeddingIdentity")})
        cursor = body["next"]
        if not cursor:
            return found


def same_pages(found: object, expected: object) -> bool:
    """Equal, but for a cosine held rows compute in float64 and pgvector in float4 (answered rounded to 1e-6,
    so the two may differ in the last digit: memories/longterm/resident_rank.py)."""
    if isinstance(found, float) and isinstance(expected, float):
        return found == pytest.approx(expected, abs=2e-6)
    if isinstance(found, dict) and isinstance(expected, dict):
        return found.keys() == expected.keys() and all(same_pages(found[k], expected[k]) for k in found)
    if isinstance(found, list) and isinstance(expected, list):
        return len(found) == len(expected) and all(same_pages(a, b) for a, b in zip(found, expected, strict=True))
    return found == expected


@pytest.fixture
def sql_path(monkeypatch):
    """No user is held in this process: the hybrid search ranks in SQL."""
    monkeypatch.setattr(resident, "MAX_ROWS", 0)


def test_one_statement_and_held_rows_answer_what_two_searches_fused_answer(alice, memories, monkeypatch):
    monkeypatch.setattr(resident, "ADMIT_AT_SEARCH", 1)  # held from the first search
    compared = 0
    for query in QUERIES:
        for floor in ({}, {"minScore": -1.0}):
            held = pages(alice, query, **floor)
            with monkeypatch.context() as one_statement:
                one_statement.setattr(resident, "MAX_ROWS", 0)
                assert same_pages(pages(alice, query, **floor), held), (query, floor)
                one_statement.setattr(hybrid_postgres, "rankings", lambda *args, **kwargs: None)  # two searches
                assert same_pages(pages(alice, query, **floor), held), (query, floor)
            compared += sum(len(page["results"]) for page in held)
    assert compared > 40  # most queries find several memories: the comparison is not of empty pages


def test_both_rankings_are_one_statement_and_only_the_page_is_read_whole(alice, memories, sql_path):
    search(alice, "中文回答", "hybrid")  # the query's vector and the product's kinds are in the working set now
    with CaptureQueriesContext(connection) as sent:
        body = search(alice, "中文回答", "hybrid", limit=3).json()
    assert len(body["results"]) == 3 and body["results"][0]["id"] in memories
    statements = [q["sql"] for q in sent.captured_queries if "memories_longtermmemory" in q["sql"]]
    assert len(statements) == 2, statements
    assert "search_tsv" in statements[0] and "memoryhub_search_exact(" in statements[0]
    assert "= ANY(" in statements[1]


def test_a_user_over_the_exact_scan_bound_is_searched_as_two_searches(alice, memories, monkeypatch, sql_path):
    expected = search(alice, "中文回答", "hybrid").json()["results"]
    monkeypatch.setattr(vectors, "EXACT_SCAN_MAX_ROWS", 3)  # this user's 8 rows now take the HNSW branch
    with CaptureQueriesContext(connection) as sent:
        found = search(alice, "中文回答", "hybrid").json()["results"]
    assert any("embedding::vector(" in q["sql"] for q in sent.captured_queries)  # the HNSW statement ran
    assert [r["id"] for r in found] == [r["id"] for r in expected]
