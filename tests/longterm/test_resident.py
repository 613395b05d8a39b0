"""PostgreSQL: a user's long-term memories held in this process for hybrid and semantic search (resident.py).

The held path must answer what the SQL path answers, take one statement per search, and see every change made
by any means — the API, SQL, another user's move, a deletion, a rollback — at the next search.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.lifecycle.services.erasure import erasure_run, erasure_start
from memories.longterm import hybrid_postgres, keyword, resident, resident_rank, selectors
from memories.longterm.models import LongTermMemory
from memories.longterm.services import vectors
from memories.longterm.services.embedding_index import index_last_seen
from memoryhub.addresses import UserAddress
from tests.longterm.kind_support import DIET_KIND, KINDS_URL, VEGAN
from tests.longterm.support import PREFERENCE_ZH, create, memories_url, proposal, search, update_body

pytestmark = [pytest.mark.requires_postgres]

TEXTS = [
    "用户喜欢简短的中文回答",
    "回答时先给结论，再用中文解释",
    "用户希望用中文讨论咖啡和茶",
    "Short English answers about coffee, please",
    "Explain databases with examples, in English",
    "I like bullet-point summaries of my running plans",
]
QUERIES = ["中文回答", "coffee", "answers in English please", "总结 summaries", "vegan recipes", "天气"]


@pytest.fixture(autouse=True)
def admitted_at_once(monkeypatch):
    """A user is held from their first search here (the admission at the second has its own test)."""
    monkeypatch.setattr(resident, "ADMIT_AT_SEARCH", 1)


def write(api, texts=TEXTS, user: str = "u1") -> list[str]:
    return [create(api, proposal(content={"language": "zh", "text": text}), user=user)["id"] for text in texts]


def results(api, query: str, user: str = "u1", mode: str = "hybrid", **extra) -> list[tuple[str, float, dict]]:
    response = search(api, query, mode, user=user, **{"limit": 50, "minScore": -1.0, **extra})
    assert response.status_code == 200, response.json()
    return [(r["id"], r["score"], r["why"]) for r in response.json()["results"]]


def held_rows(api, user: str = "u1") -> dict[int, resident.Held] | None:
    found = resident._held.get((api.product.pk, user))
    return None if found is None else found.rows


def sql_results(api, monkeypatch, query: str, user: str = "u1", mode: str = "hybrid", **extra) -> list:
    with monkeypatch.context() as patched:
        patched.setattr(resident, "MAX_ROWS", 0)
        return results(api, query, user, mode, **extra)


def assert_same(held: list, sql: list, mode: str = "hybrid") -> None:
    """The same memories in the same order; scores equal but for pgvector's float4 sums (~1e-6).

    A hybrid score is fused from ranks (exact); a semantic one is the cosine itself.
    """
    assert [pk for pk, _, _ in held] == [pk for pk, _, _ in sql]
    for (_, score, why), (_, sql_score, sql_why) in zip(held, sql, strict=True):
        assert score == pytest.approx(sql_score, abs=1e-9 if mode == "hybrid" else 2e-6)
        assert why.keys() == sql_why.keys()
        for signal in ("keyword", "semantic"):
            if signal in why:
                assert why[signal]["rank"] == sql_why[signal]["rank"]
                assert why[signal]["score"] == pytest.approx(sql_why[signal]["score"], abs=2e-6)


@pytest.mark.django_db
def test_the_refresh_function_answers_a_memorys_columns():
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM memoryhub_longterm_refresh('', '', '{}', NULL, 1, NULL, 0, '', '')")
        names = [column.name for column in cursor.description]
    header = ["total", "snapshot", "marker", "live", "own_kinds", "term_lexemes", "own_writes"]
    assert names == [*header, "embedding", "lexemes", *vectors._ROW_COLUMNS]


def rows_in_every_state(api) -> tuple[list[str], str]:
    """TEXTS as u1's memories, 0 expired, 1 expiring tomorrow, 2 superseded, 4 rolled back; a memory of the
    product's own searchable kind; another user's memory. Returns the ids of TEXTS and of the product-kind one."""
    ids = write(api)
    assert api.post(KINDS_URL, DIET_KIND).status_code == 201
    vegan = create(api, VEGAN)["id"]
    write(api, ["Short English answers about coffee from the other user"], user="u2")
    now = timezone.now()
    LongTermMemory.objects.filter(memory_id=ids[0]).update(expires_at=now - timedelta(minutes=1))
    LongTermMemory.objects.filter(memory_id=ids[1]).update(expires_at=now + timedelta(days=1))
    LongTermMemory.objects.filter(memory_id=ids[2]).update(superseded_by=ids[3], superseded_at=now)
    LongTermMemory.objects.filter(memory_id=ids[4]).update(rolled_back_at=now)
    return ids, vegan


@pytest.mark.django_db
def test_held_rows_rank_as_sql_does_with_every_kind_of_row_that_is_not_current(alice, monkeypatch):
    ids, vegan = rows_in_every_state(alice)
    compared = 0
    for query in QUERIES:
        held = results(alice, query)
        assert not {ids[0], ids[2], ids[4]} & {pk for pk, _, _ in held}
        assert_same(held, sql_results(alice, monkeypatch, query))
        compared += len(held)
    assert compared >= 12
    assert results(alice, "vegan")[0][0] == vegan  # the product's own searchable kind is searched


@pytest.mark.django_db
def test_held_rows_answer_a_semantic_search_as_sql_does_page_by_page(alice, monkeypatch):
    ids, vegan = rows_in_every_state(alice)
    for query in QUERIES:
        with CaptureQueriesContext(connection) as sent:
            held = results(alice, query, mode="semantic")
        assert not [q for q in sent.captured_queries if "memoryhub_search_exact" in q["sql"]]  # ranked from held rows
        assert {pk for pk, _, _ in held} == {ids[1], ids[3], ids[5], vegan}  # current rows of searchable kinds
        assert_same(held, sql_results(alice, monkeypatch, query, mode="semantic"), mode="semantic")
        middle = len(held) // 2  # a floor between two scores (answered rounded): it keeps the first half only
        floor = (held[middle - 1][1] + held[middle][1]) / 2
        assert results(alice, query, mode="semantic", minScore=floor) == held[:middle]
    pages = {"held": [], "sql": []}
    for path in pages:
        with monkeypatch.context() as patched:
            patched.setattr(resident, "MAX_ROWS", 0 if path == "sql" else resident.MAX_ROWS)
            cursor = None
            while True:
                extra = {"cursor": cursor} if cursor else {}
                body = search(alice, "coffee", "semantic", user="u1", limit=2, **extra).json()
                pages[path].append([hit["id"] for hit in body["results"]])
                cursor = body.get("next")
                if not cursor:
                    break
    assert pages["held"] == pages["sql"] and len(pages["held"]) == 2


@pytest.mark.django_db(transaction=True)
def test_a_warm_semantic_search_is_one_statement_and_sees_a_new_memory(alice):
    write(alice)
    results(alice, "coffee", mode="semantic")
    with CaptureQueriesContext(connection) as sent:
        first = results(alice, "coffee", mode="semantic")
    assert [q["sql"] for q in sent.captured_queries if "memoryhub_longterm_refresh" in q["sql"]]
    assert not [q["sql"] for q in sent.captured_queries if LongTermMemory._meta.db_table in q["sql"]]
    assert not [q["sql"] for q in sent.captured_queries if "memoryhub_search_exact" in q["sql"]]
    added = create(alice, proposal(content={"language": "zh", "text": "Coffee answers, short, in English"}))["id"]
    assert added in [pk for pk, _, _ in results(alice, "coffee", mode="semantic")]
    assert len(first) == len(TEXTS)


@pytest.mark.django_db(transaction=True)
def test_a_held_memory_that_expires_between_two_searches_is_not_found_by_the_second(alice):
    ids = write(alice)
    for mode in ("semantic", "hybrid"):  # held, and the keyword tokenizer loaded: the searches below are quick
        results(alice, "coffee", mode=mode)
    expires = timezone.now() + timedelta(seconds=2)
    LongTermMemory.objects.filter(memory_id=ids[3]).update(expires_at=expires)
    for mode in ("semantic", "hybrid"):
        assert ids[3] in [pk for pk, _, _ in results(alice, "coffee", mode=mode)]
    rows = held_rows(alice)
    time.sleep(max(0.0, (expires - timezone.now()).total_seconds()) + 0.05)
    for mode in ("semantic", "hybrid"):
        assert ids[3] not in [pk for pk, _, _ in results(alice, "coffee", mode=mode)]
    assert held_rows(alice) is rows  # nothing changed in the table: the same rows, searched at a later instant


@pytest.mark.django_db(transaction=True)
def test_the_products_searchable_kinds_are_read_at_every_search(alice):
    assert alice.post(KINDS_URL, DIET_KIND).status_code == 201
    vegan = create(alice, VEGAN)["id"]
    assert vegan in [pk for pk, _, _ in results(alice, "vegan")]
    with connection.cursor() as cursor:  # the API keeps `searchable` fixed: only SQL could change it
        cursor.execute("UPDATE longterm_memorykind SET searchable = false WHERE name = 'diet'")
    assert vegan not in [pk for pk, _, _ in results(alice, "vegan")]
    assert held_rows(alice) is not None


@pytest.mark.django_db(transaction=True)
def test_a_warm_search_is_one_statement_and_keeps_the_same_rows(alice):
    write(alice)
    first = results(alice, "coffee")
    rows = held_rows(alice)
    assert rows is not None and len(rows) == len(TEXTS)
    with CaptureQueriesContext(connection) as sent:
        assert results(alice, "coffee") == first
    assert [q["sql"] for q in sent.captured_queries if "memoryhub_longterm_refresh" in q["sql"]]
    assert not [q["sql"] for q in sent.captured_queries if LongTermMemory._meta.db_table in q["sql"]]
    assert held_rows(alice) is rows  # nothing changed: the same object, nothing read again


@pytest.mark.django_db(transaction=True)
def test_writes_by_the_api_are_seen_at_the_next_search_without_reading_everything_again(alice, monkeypatch):
    ids = write(alice)
    results(alice, "coffee")
    added = create(alice, proposal(content={"language": "zh", "text": "Coffee with oat milk every morning"}))["id"]
    found = results(alice, "coffee")
    assert added in [pk for pk, _, _ in found]
    assert_same(found, sql_results(alice, monkeypatch, "coffee"))
    record = alice.get(f"{memories_url()}/{ids[3]}").json()
    tea = {"language": "zh", "text": "Tea, never coffee"}
    changed = update_body(PREFERENCE_ZH, expected=record["version"], content=tea)
    assert alice.patch(f"{memories_url()}/{ids[3]}", changed).status_code == 200
    after = results(alice, "tea")
    assert after and after[0][0] == ids[3]
    assert alice.get(f"{memories_url()}/{ids[3]}").json()["content"]["text"] == "Tea, never coffee"
    assert_same(after, sql_results(alice, monkeypatch, "tea"))


@pytest.mark.django_db(transaction=True)
def test_deletions_by_the_api_or_by_sql_and_moved_rows_are_seen_at_the_next_search(alice, monkeypatch):
    ids = write(alice)
    results(alice, "coffee")
    assert alice.delete(f"{memories_url()}/{ids[3]}").status_code == 204
    assert ids[3] not in [pk for pk, _, _ in results(alice, "coffee")]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_longtermmemory WHERE memory_id = %s", [ids[2]])
        cursor.execute("UPDATE memories_longtermmemory SET user_id = 'u9' WHERE memory_id = %s", [ids[0]])
    found = results(alice, "中文回答")
    assert not {ids[0], ids[2], ids[3]} & {pk for pk, _, _ in found}
    assert len(held_rows(alice) or {}) == len(TEXTS) - 3
    assert_same(found, sql_results(alice, monkeypatch, "中文回答"))


@pytest.mark.django_db(transaction=True)
def test_rows_read_by_a_transaction_that_wrote_and_rolled_back_are_never_served(alice):
    write(alice)
    results(alice, "coffee")

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), transaction.atomic():
        ghost = create(alice, proposal(content={"language": "zh", "text": "Ghost coffee that never was"}))["id"]
        assert ghost in [pk for pk, _, _ in results(alice, "ghost coffee")]  # its own write, in its transaction
        raise Abandoned
    assert ghost not in [pk for pk, _, _ in results(alice, "ghost coffee")]
    assert all(row.memory.memory_id != ghost for row in (held_rows(alice) or {}).values())


@pytest.mark.django_db(transaction=True)
def test_a_user_over_the_bound_is_ranked_in_sql_and_not_held(alice, monkeypatch):
    write(alice)
    expected = results(alice, "coffee")
    monkeypatch.setattr(resident, "MAX_ROWS", len(TEXTS) - 1)
    with CaptureQueriesContext(connection) as sent:
        assert_same(results(alice, "coffee"), expected)
    assert any("search_tsv" in q["sql"] for q in sent.captured_queries)  # the BM25 statement ran
    assert held_rows(alice) is None


@pytest.mark.django_db(transaction=True)
def test_an_erased_user_is_no_longer_held(alice):
    write(alice)
    results(alice, "coffee")
    assert held_rows(alice) is not None
    started = erasure_start(product=alice.product, user_id="u1", requested_by="test", schedule=False)
    assert erasure_run(erasure_id=started.pk).status == "done"  # in this process, as the command runs it
    assert held_rows(alice) is None  # this process's copy went with the rows
    assert results(alice, "coffee") == []


def test_a_term_of_several_lexemes_has_no_single_lexeme():
    assert keyword.single_lexeme("'coffee'") == "coffee"
    assert keyword.single_lexeme("") is None
    assert keyword.single_lexeme("'e' <-> 'mail'") is False


@pytest.mark.django_db(transaction=True)
def test_a_user_is_read_whole_at_their_second_search_and_the_first_is_ranked_in_sql(alice, monkeypatch):
    monkeypatch.setattr(resident, "ADMIT_AT_SEARCH", 2)
    write(alice)
    with CaptureQueriesContext(connection) as first:
        expected = results(alice, "coffee")
    assert any("search_tsv" in q["sql"] for q in first.captured_queries)  # the BM25 statement: the SQL path
    assert held_rows(alice) is None
    with CaptureQueriesContext(connection) as second:
        assert_same(results(alice, "coffee"), expected)
    assert not any("search_tsv" in q["sql"] for q in second.captured_queries)
    assert len(held_rows(alice) or {}) == len(TEXTS)


@pytest.mark.django_db
def test_both_rankings_of_held_rows_are_the_statements_own(alice):
    """Below the API: each signal's ranking, id by id, against `hybrid_postgres.rankings` (the SQL path)."""
    write(alice)
    write(alice, ["Coffee and tea answers", "回答 中文 咖啡"])
    scope = UserAddress(alice.product, "u1")
    in_use, now = index_last_seen(), timezone.now()
    kinds = selectors.searchable_kinds(alice.product)
    for query in QUERIES:
        terms = keyword.query_terms(query)
        vector = in_use.embed_query_array(alice.product.pk, query)
        in_sql = hybrid_postgres.rankings(scope, terms, kinds, in_use, vector, 100, now)
        loaded = resident.load(scope, terms, in_use)
        assert in_sql is not None and loaded is not None
        held, _ = resident_rank.rankings(loaded, kinds, int(in_use.index.pk), vector, 100, now)
        assert [pk for pk, _ in held.keyword] == [pk for pk, _ in in_sql.keyword], query
        assert [score for _, score in held.keyword] == pytest.approx([s for _, s in in_sql.keyword], rel=1e-12)
        assert [pk for pk, _ in held.semantic] == [pk for pk, _ in in_sql.semantic], query
        assert [score for _, score in held.semantic] == pytest.approx([s for _, s in in_sql.semantic], abs=2e-6)
        for query_script in ("cjk", "other"):
            semantic = {pk for pk, _ in held.semantic}
            assert set(held.unreadable(query_script)) & semantic == set(in_sql.unreadable(query_script)) & semantic


@pytest.mark.django_db(transaction=True)
def test_no_memory_budget_holds_nobody(alice, settings):
    settings.SEARCH_HELD_MEMORY_MB = 0
    write(alice)
    for _ in range(2):
        with CaptureQueriesContext(connection) as sent:
            results(alice, "coffee")
        assert any("search_tsv" in q["sql"] for q in sent.captured_queries)  # ranked in SQL every time
    assert held_rows(alice) is None
