"""Semantic search after a change: the SQLite vector cache (memories/history/vector_cache.py) is never stale.

Each test searches first (which fills a SQLite process's cache), changes the index behind the search's back
(a superseded reply, an erased message, a re-embedded one, a new one), and checks that the next search sees
the change. On PostgreSQL the same behaviour holds through pgvector (no cache).
"""

from __future__ import annotations

import numpy as np
import pytest

from memories.history import vector_cache
from memories.history.models import HistoryEntry
from memories.longterm.services.embedding_index import index_in_use
from tests.history.support import contents, imported, message, search
from tests.history.test_import_search import TRIP, ZH
from tests.history.test_recall_source import OLD, regenerate_lighthouse_reply, scenario, turn

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "advice for taking my pet to the animal doctor"


@pytest.fixture(autouse=True)
def empty_cache():
    vector_cache.clear()  # a test's rows get the ids of a previous test's (flushed) rows
    yield
    vector_cache.clear()


def semantic(api, query: str = QUERY, **fields) -> list[dict]:
    response = search(api, "u1", query, "semantic", limit=100, **fields)
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def test_the_ranking_equals_an_exact_numpy_cosine_ranking_cold_and_cached(alice):
    """SQLite: the cached matrix answers as an exact scan; PostgreSQL: pgvector's index over a few rows does too."""
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u1", "c2", ZH)
    imported(alice, "u1", "c3", OLD)
    rows = list(HistoryEntry.objects.filter(user_id="u1").values_list("pk", "client_id", "embedding"))
    query = np.asarray(index_in_use().embed_query(alice.product.pk, QUERY), dtype=np.float64)
    cosine = {pk: float(np.dot(v, query) / (np.linalg.norm(v) * np.linalg.norm(query))) for pk, _, v in rows}
    by_pk = {pk: client for pk, client, _ in rows}
    expected = [by_pk[pk] for pk in sorted(cosine, key=lambda pk: (-cosine[pk], -pk))]
    for _ in ("cold", "cached"):
        hits = semantic(alice)
        assert [hit["clientId"] for hit in hits] == expected
        for hit in hits:
            pk = next(pk for pk, client in by_pk.items() if client == hit["clientId"])
            assert hit["score"] == pytest.approx(cosine[pk], abs=1e-5)


def test_a_reembedded_message_is_ranked_by_its_new_vector(alice):
    imported(alice, "u1", "c1", TRIP)
    assert semantic(alice)[0]["clientId"] in {"t3", "t4"}
    # The Lisbon reply gets the query's own vector: the next search must rank it first, cosine 1.
    vector = index_in_use().embed_query(alice.product.pk, QUERY)
    HistoryEntry.objects.filter(user_id="u1", client_id="t2").update(embedding=vector)
    first = semantic(alice)[0]
    assert first["clientId"] == "t2" and first["score"] == pytest.approx(1.0, abs=1e-5)


def test_an_erased_message_and_a_new_one_change_the_next_search(alice):
    imported(alice, "u1", "c1", TRIP)
    top = semantic(alice)[0]["clientId"]
    HistoryEntry.objects.filter(user_id="u1", client_id=top).delete()
    after = [hit["clientId"] for hit in semantic(alice)]
    assert top not in after and len(after) == len(TRIP) - 1
    imported(
        alice, "u1", "c1", [message("t5", "user", "The animal doctor said my pet is healthy.", "2024-05-04T09:00:00Z")]
    )
    assert "t5" in [hit["clientId"] for hit in semantic(alice)]


def test_filters_apply_to_a_cached_user(alice):
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u1", "c2", ZH)
    assert len(semantic(alice)) == len(TRIP) + len(ZH)
    assert {hit["clientId"] for hit in semantic(alice, conversations=["c2"])} == {"z1", "z2"}
    assert {hit["clientId"] for hit in semantic(alice, roles=["assistant"])} == {"t2", "t4", "z2"}


def test_a_reply_superseded_after_a_search_is_never_found_again(alice):
    scenario(alice)
    first = turn(alice, "c", "Tell me about lighthouses", reply="Lighthouses guide ships with a flashing beam.")
    query = "lighthouse flashing beam ships"
    assert "Lighthouses guide ships with a flashing beam." in contents(search(alice, "u1", query, "semantic"))
    regenerate_lighthouse_reply(alice, first)
    found = contents(search(alice, "u1", query, "semantic", limit=100))
    assert "Lighthouses guide ships with a flashing beam." not in found
    assert "Towers of light on rocky coasts." in found


def test_the_cache_is_bounded_by_bytes(alice, monkeypatch):
    """(PostgreSQL keeps no vector cache: there the answer is the same and nothing is cached either.)"""
    imported(alice, "u1", "c1", TRIP)
    monkeypatch.setattr(vector_cache, "MAX_BYTES", 1)  # smaller than one user's matrix: nothing is kept
    expected = [hit["clientId"] for hit in semantic(alice)]
    assert vector_cache.cached_bytes() == 0
    assert [hit["clientId"] for hit in semantic(alice)] == expected
