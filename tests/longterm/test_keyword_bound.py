"""PostgreSQL long-term keyword ranking: BM25 over the user's rows in one statement, on bounded work.

The statistics come from the user's newest `keyword.SAMPLE` current rows and the newest `keyword.CANDIDATES`
matches are ranked (docs/recall.md): exact below the bound, the newest rows above it.
"""

from __future__ import annotations

import math

import pytest
from django.db import connection

from memories.longterm import keyword
from tests.longterm.support import memories_url, search

pytestmark = [pytest.mark.django_db, pytest.mark.requires_postgres]

NOTE_KIND = {
    "name": "note",
    "contentSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "searchable": True,
    "textField": "text",
    "evidencePolicy": "quote",
}
NOTES = [
    "the violin recital went well",
    "violin lessons on tuesday and violin practice",
    "a garden party after the recital",
    "nothing about music here",
    "the garden needs water",
    "recital tickets for the garden concert",
]


def write_notes(api) -> list[str]:
    assert api.post("/v1/memory-kinds", NOTE_KIND).status_code == 201
    ids = []
    for text in NOTES:
        body = {"kind": "note", "content": {"text": text}, "evidence": text, "source": text, "consent": True}
        response = api.post(memories_url(), body)
        assert response.status_code == 201, response.json()
        ids.append(response.json()["id"])
    return ids


def expected_bm25(terms: list[str], sample: int, candidates: int) -> list[tuple[str, float]]:
    """The documented formula in Python: statistics over the newest `sample` rows, the newest `candidates`
    matches ranked; a term counts once per record, a record's length is its number of lexemes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT memory_id, search_text, length(to_tsvector('simple'::regconfig, search_text)) "
            "FROM memories_longtermmemory WHERE user_id = 'u1' ORDER BY id DESC"
        )
        rows = cursor.fetchall()
    words = {memory_id: set(text.split()) for memory_id, text, _ in rows}
    stats = rows[:sample]
    n, average = len(stats), sum(length for _, _, length in stats) / len(stats)
    df = {term: sum(term in words[memory_id] for memory_id, _, _ in stats) for term in terms}
    matches = [row for row in rows if words[row[0]] & set(terms)][:candidates]
    scored = []
    for memory_id, _, length in matches:
        idf = sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if t in words[memory_id])
        scored.append((memory_id, idf * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * length / average))))
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def hits(api, query: str) -> list[tuple[str, float]]:
    response = search(api, query, "keyword", limit=20)
    assert response.status_code == 200, response.json()
    return [(hit["id"], hit["score"]) for hit in response.json()["results"]]


def test_under_the_bound_every_row_counts_and_scores_are_bm25(alice):
    write_notes(alice)
    found = hits(alice, "violin garden recital")
    expected = expected_bm25(["violin", "garden", "recital"], sample=len(NOTES), candidates=len(NOTES))
    assert len(found) == 5  # every note but "nothing about music here"
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=1e-6)
    assert {memory_id for memory_id, _ in found} == {memory_id for memory_id, _ in expected}


def test_over_the_bound_the_newest_rows_give_the_statistics_and_the_newest_matches_are_ranked(alice, monkeypatch):
    ids = write_notes(alice)
    monkeypatch.setattr(keyword, "SAMPLE", 3)
    monkeypatch.setattr(keyword, "CANDIDATES", 2)
    found = hits(alice, "violin garden recital")
    expected = expected_bm25(["violin", "garden", "recital"], sample=3, candidates=2)
    # The two newest matching notes only (the last two written), scored with the newest three rows' statistics.
    assert {memory_id for memory_id, _ in found} == {ids[-1], ids[-2]}
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=1e-6)
    assert [memory_id for memory_id, _ in found] == [memory_id for memory_id, _ in expected]
