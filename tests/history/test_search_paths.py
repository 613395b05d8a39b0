"""History search's cheap paths give the answers of the ones they replaced (docs/history.md, "Round trips").

PostgreSQL: an exact scan for a user with few messages ranks as the HNSW scan does; a hybrid search is three
statements; the neighbour lookup (one statement text, arrays) finds what the clause-per-hit form found.
SQLite runs the same tests: one semantic path, its own statement count, the same neighbours.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.history import selectors
from memories.history.models import HistoryEntry
from memories.history.selectors import HistoryFilters, history_search, neighbours
from memoryhub.addresses import UserAddress
from tests.history.support import imported, search
from tests.history.test_import_search import TRIP, ZH
from tests.history.test_recall_source import OLD

# The SQL statements' paths; a user held resident in the process (resident.py) is tested in test_resident.py.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("sql_path")]

QUERY = "advice for taking my pet to the animal doctor"
EXACT_TEXT, HNSW_TEXT = "ORDER BY 2, 1 DESC", "::vector("  # what each branch's statement says (migration 0004)


def ranked(api, user: str, mode: str = "semantic") -> list[tuple[str, float]]:
    response = search(api, user, QUERY, mode, limit=100)
    assert response.status_code == 200, response.json()
    return [(hit["clientId"], hit["score"]) for hit in response.json()["results"]]


def branch_of(call) -> tuple[object, str]:
    """The call's result and which branch the semantic function took ("" off PostgreSQL)."""
    if connection.vendor != "postgresql":
        return call(), ""
    from tests.support.pg_plans import plans_of

    result, plans = plans_of(call)
    text = "\n".join(plans)
    assert (EXACT_TEXT in text) != (HNSW_TEXT in text), text
    return result, "exact" if EXACT_TEXT in text else "hnsw"


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_exact_scan_and_hnsw_rank_the_same_under_and_over_the_bound(alice, monkeypatch, mode):
    imported(alice, "small", "c1", TRIP)
    imported(alice, "large", "c1", TRIP)
    imported(alice, "large", "c2", ZH)
    imported(alice, "large", "c3", OLD)
    expected = {"postgresql": ("exact", "hnsw"), "sqlite": ("", "")}[connection.vendor]
    for user in ("small", "large"):
        exact, path = branch_of(partial(ranked, alice, user, mode))
        assert path == expected[0]
        # Lowered below the small user's 4 messages, so both users are now over it and searched through HNSW.
        monkeypatch.setattr(selectors, "EXACT_SCAN_MAX_ROWS", 3)
        hnsw, path = branch_of(partial(ranked, alice, user, mode))
        assert path == expected[1]
        monkeypatch.setattr(selectors, "EXACT_SCAN_MAX_ROWS", 2000)
        assert [client for client, _ in exact] == [client for client, _ in hnsw] and exact
        assert [score for _, score in exact] == pytest.approx([score for _, score in hnsw], abs=1e-6)
    # At a bound of 4 the small user's 4 messages are under it and the large user's are over: each its path.
    monkeypatch.setattr(selectors, "EXACT_SCAN_MAX_ROWS", 4)
    assert branch_of(partial(ranked, alice, "small", mode))[1] == expected[0]
    assert branch_of(partial(ranked, alice, "large", mode))[1] == expected[1]


AFTER = datetime(2024, 5, 2, tzinfo=UTC)
FILTERS = [
    HistoryFilters(conversations=("c2", "c3")),
    HistoryFilters(roles=("assistant",)),
    HistoryFilters(after=AFTER),
    HistoryFilters(before=AFTER),
    HistoryFilters(exclude_conversation="c1", exclude_from_round=2),
]


def selected(entry: HistoryEntry, filters: HistoryFilters) -> bool:
    excluded = entry.conversation_id == filters.exclude_conversation and entry.round >= (
        filters.exclude_from_round or 0
    )
    return (
        (not filters.conversations or entry.conversation_id in filters.conversations)
        and (not filters.roles or entry.role in filters.roles)
        and (filters.after is None or entry.created_at >= filters.after)
        and (filters.before is None or entry.created_at < filters.before)
        and not excluded
    )


@pytest.mark.parametrize("bound", [2000, 0])
def test_semantic_filters_select_what_they_say_on_either_path(alice, monkeypatch, bound):
    """The function's copy of the filters (migration 0004) leaves what HistoryFilters says, exact or HNSW."""
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u1", "c2", ZH)
    imported(alice, "u1", "c3", OLD)
    monkeypatch.setattr(selectors, "EXACT_SCAN_MAX_ROWS", bound)
    scope = UserAddress(alice.product, "u1")
    everything = [hit.entry for hit in history_search(scope, query=QUERY, mode="semantic", limit=100)]
    for filters in FILTERS:
        found = history_search(scope, query=QUERY, mode="semantic", limit=100, filters=filters)
        expected = [entry.pk for entry in everything if selected(entry, filters)]
        assert [hit.entry.pk for hit in found] == expected and 0 < len(expected) < len(everything), filters


def test_a_hybrid_search_is_three_statements_on_postgresql(alice):
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u1", "c2", OLD)
    search(alice, "u1", QUERY)  # warm: the query's vector, the active index, the SQLite vector cache
    with CaptureQueriesContext(connection) as queries:
        response = search(alice, "u1", QUERY)
    assert response.status_code == 200 and response.json()["results"], response.json()
    statements = [q["sql"] for q in queries.captured_queries if "history_entry" in q["sql"]]
    # Both rankings with their rows; the neighbours; the answered entries. SQLite: keyword, the semantic
    # ids, the rows of the ranked messages, the neighbours, the answered entries.
    assert len(statements) == {"postgresql": 3, "sqlite": 5}[connection.vendor], statements
    assert not [q for q in queries.captured_queries if q["sql"].upper().startswith(("SET", "BEGIN", "SAVEPOINT"))]


def entry(product, conversation: str, round_: int, n: int) -> HistoryEntry:
    when = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=n)
    return HistoryEntry(
        product=product,
        user_id="u1",
        conversation_id=conversation,
        client_id=f"{conversation}-{n}",
        round=round_,
        role="user" if n % 2 == 0 else "assistant",
        content=f"message {n}",
        created_at=when,
    )


def clause_per_hit_neighbours(hits: list[int], rows: dict) -> dict[int, list[int]]:
    """The former lookup, over every row of the user: the nearest smaller and larger id within a round."""
    every = list(HistoryEntry.objects.filter(user_id="u1").values_list("pk", "conversation_id", "round"))
    out = {}
    for hit in hits:
        conversation, round_, _ = rows[hit]
        near = sorted(pk for pk, c, r in every if c == conversation and max(round_ - 1, 0) <= r <= round_ + 1)
        before, after = [pk for pk in near if pk < hit], [pk for pk in near if pk > hit]
        out[hit] = ([before[-1]] if before else []) + ([after[0]] if after else [])
    return out


def test_neighbours_are_the_nearest_ids_within_a_round_as_before(alice):
    # Two conversations with rounds 0-5: two or three messages a round, a missing round, ids interleaved.
    layout = [(c, r) for r in (0, 0, 1, 2, 2, 2, 4, 5, 5) for c in ("a", "b")]
    HistoryEntry.objects.bulk_create([entry(alice.product, c, r, n) for n, (c, r) in enumerate(layout)])
    rows = {
        pk: (c, r, text)
        for pk, c, r, text in HistoryEntry.objects.values_list("pk", "conversation_id", "round", "content")
    }
    hits = sorted(rows)[::2]
    found = neighbours(UserAddress(alice.product, "u1"), HistoryFilters(), hits, rows)
    assert found == clause_per_hit_neighbours(hits, rows)
    assert any(len(pks) == 2 for pks in found.values()) and any(len(pks) == 1 for pks in found.values())
