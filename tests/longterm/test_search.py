"""Keyword and semantic search through the API, on real embeddings from the bundled model."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.longterm.models import LongTermMemory
from memoryhub.clients.embeddings import embed_queries, get_embedder
from tests.longterm.support import (
    EN_DETAIL,
    PREFERENCE_EN,
    ZH_LANGUAGE,
    create,
    memories_url,
    proposal,
    search,
    update_body,
)
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

COFFEE = proposal(
    content={"detail": "brief", "text": "回答要简短，像咖啡馆菜单一样"},
    evidence="以后回答都简短一点",
    source="以后回答都简短一点，像咖啡馆菜单一样。",
)


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [r["id"] for r in response.json()["results"]]


# --- keyword ----------------------------------------------------------------------------------------


def test_keyword_search_finds_chinese_words_inside_unspaced_sentences(alice):
    zh, en = create(alice, ZH_LANGUAGE)["id"], create(alice, EN_DETAIL)["id"]
    response = search(alice, "中文回答", "keyword")
    body = response.json()
    assert body["mode"] == "keyword" and body["query"] == "中文回答" and "embeddingIdentity" not in body
    assert ids(response) == [zh]
    assert body["results"][0]["version"] == 1 and body["results"][0]["score"] > 0
    assert ids(search(alice, "简短", "keyword")) == [zh]  # one word out of "用户喜欢简短的中文回答"
    assert ids(search(alice, "日语", "keyword")) == []
    assert en not in ids(search(alice, "中文", "keyword"))


def test_keyword_search_works_for_english_and_ranks_more_matching_words_first(alice):
    en = create(alice, proposal(PREFERENCE_EN))["id"]
    other = create(alice, proposal(PREFERENCE_EN, content={"language": "en", "text": "English please"}))["id"]
    assert ids(search(alice, "ENGLISH", "keyword")) == [other, en]  # case-insensitive, ties newest first
    assert ids(search(alice, "detailed english", "keyword")) == [en, other]


def test_keyword_search_is_parameterised(alice):
    create(alice)
    for hostile in ["'; DROP TABLE memories_longtermmemory; --", "日语' OR '1'='1", "% _ \\", "!(a) & | :*"]:
        assert ids(search(alice, hostile, "keyword")) == []
    assert LongTermMemory.objects.count() == 1


def test_keyword_search_does_not_match_a_paraphrase_it_is_not_semantic(alice):
    create(alice)
    assert ids(search(alice, "请用简洁的中文回复我", "keyword")) != []  # shares the word 中文
    assert ids(search(alice, "简洁 回复", "keyword")) == []  # synonyms only: keyword search says no


# --- semantic ---------------------------------------------------------------------------------------


def test_semantic_search_ranks_a_paraphrase_above_an_unrelated_record(alice):
    stored = create(alice, ZH_LANGUAGE)["id"]  # 用户喜欢简短的中文回答
    unrelated = create(alice, EN_DETAIL)["id"]
    response = search(alice, "请用简洁的中文回复我", "semantic")
    body = response.json()
    assert body["mode"] == "semantic"
    assert body["embeddingIdentity"] == get_embedder().identity.key
    assert ids(response) == [stored, unrelated]
    first, second = body["results"]
    assert first["score"] > second["score"] and first["version"] == 1
    assert set(first) >= {"id", "version", "score", "content", "key"}


def test_semantic_scores_are_the_cosine_of_the_stored_vector_and_the_query(alice):
    record = create(alice)
    score = search(alice, "请用简洁的中文回复我", "semantic").json()["results"][0]["score"]
    (a,), (b,) = (
        get_embedder().embed(["用户喜欢简短的中文回答"]),
        embed_queries(get_embedder(), ["请用简洁的中文回复我"]),
    )
    assert score == pytest.approx(float(np.dot(a, b)), abs=1e-4)
    assert record["id"]


def test_an_update_is_re_embedded_in_the_same_write(alice):
    record = create(alice)
    alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1))
    row = LongTermMemory.objects.get()
    expected = get_embedder().embed([PREFERENCE_EN["content"]["text"]])[0]
    assert np.allclose(np.asarray(row.embedding, dtype=float), expected, atol=1e-5)
    hit = search(alice, "answer in English with details", "semantic").json()["results"][0]
    assert hit["id"] == record["id"] and hit["version"] == 2
    assert ids(search(alice, "中文", "keyword")) == []  # the old words are gone with the old version
    assert ids(search(alice, "english", "keyword")) == [record["id"]]


def test_a_deleted_record_is_not_found_by_either_mode(alice):
    record = create(alice)
    alice.delete(f"{memories_url()}/{record['id']}")
    assert ids(search(alice, "中文", "keyword")) == ids(search(alice, "中文", "semantic")) == []


# --- what is searchable -------------------------------------------------------------------------------


def test_only_searchable_kinds_are_found_and_only_they_carry_vectors(alice, note_kind):
    note = create(
        alice,
        {
            "kind": "note",
            "content": {"text": "用户喜欢简短的中文回答"},
            "evidence": "x",
            "source": "x",
            "consent": True,
        },
    )
    pref = create(alice)
    assert ids(search(alice, "中文回答", "keyword")) == [pref["id"]]
    assert ids(search(alice, "用户喜欢简短的中文回答", "semantic")) == [pref["id"]]
    assert LongTermMemory.objects.get(memory_id=note["id"]).embedding is None


def test_task_checkpoints_never_appear_in_search(alice):
    pref = create(alice)
    put = alice.put(
        "/v1/users/u1/tasks/t1/checkpoints/collect",
        {
            "data": {"progress": "用户喜欢简短的中文回答"},
            "input": {"project": "中文回答"},
            "operationId": "cp-1",
        },
    )
    assert put.status_code == 201
    for mode in ("keyword", "semantic"):
        assert ids(search(alice, "用户喜欢简短的中文回答", mode)) == [pref["id"]]


# --- hybrid -----------------------------------------------------------------------------------------


def test_hybrid_fuses_keyword_and_semantic_and_says_why(alice):
    zh, en = create(alice, ZH_LANGUAGE), create(alice, EN_DETAIL)
    body = search(alice, "请用简洁的中文回复我", "hybrid").json()
    assert body["mode"] == "hybrid" and body["results"][0]["id"] == zh["id"]
    why = body["results"][0]["why"]
    assert why["semantic"]["rank"] == 1 and why["semantic"]["score"] > 0.3
    assert why["keyword"]["rank"] == 1  # 中文 is one of its words
    assert why["fused"] == body["results"][0]["score"] > 0
    assert body["embeddingIdentity"].startswith("local:multilingual-e5-small")
    # A word only the English record has: the keyword signal ranks it, the semantic one may not.
    hit = {r["id"]: r["why"] for r in search(alice, "detailed", "hybrid").json()["results"]}
    assert hit[en["id"]]["keyword"]["rank"] == 1


def test_single_signal_modes_carry_their_rank_and_score_as_why(alice):
    create(alice, ZH_LANGUAGE)
    (result,) = search(alice, "中文", "keyword").json()["results"]
    assert result["why"] == {"keyword": {"rank": 1, "score": result["score"]}}
    (result, *_) = search(alice, "中文", "semantic").json()["results"]
    assert result["why"] == {"semantic": {"rank": 1, "score": result["score"]}}


def test_an_unrelated_query_is_refused_by_the_hybrid_floor_but_semantic_mode_stays_as_it_was(alice):
    record = create(alice, EN_DETAIL)  # the user's only preference
    assert ids(search(alice, "What is the weather in Paris?", "hybrid")) == []  # below SEARCH_MIN_SCORE
    assert ids(search(alice, "What is the weather in Paris?", "semantic")) == [record["id"]]  # no floor
    assert ids(search(alice, "What is the weather in Paris?", "hybrid", minScore=-1.0)) == [record["id"]]
    assert ids(search(alice, "What is the weather in Paris?", "semantic", minScore=0.5)) == []
    assert ids(search(alice, "how should you answer me", "hybrid")) == [record["id"]]


def test_the_default_floor_is_the_one_measured_for_the_embedder_and_the_setting_overrides_it(alice, settings):
    assert settings.SEARCH_MIN_SCORE is None and get_embedder().min_score == 0.15  # the default embedder's
    settings.EMBEDDING_LOCAL_MODEL = "e5-minilm"  # its cosines run higher for an English query: floor 0.18
    record = create(alice, ZH_LANGUAGE)  # cosine ~0.17 with the unrelated English query below
    assert get_embedder().min_score == 0.18
    semantic = search(alice, "What is the weather in Paris?", "semantic").json()["results"]
    assert [r["id"] for r in semantic] == [record["id"]] and 0.15 < semantic[0]["score"] < 0.18
    assert ids(search(alice, "What is the weather in Paris?", "hybrid")) == []  # the blend's 0.18
    settings.SEARCH_MIN_SCORE = 0.15
    assert ids(search(alice, "What is the weather in Paris?", "hybrid")) == [record["id"]]


def test_a_hybrid_cursor_is_bound_to_its_floor(alice):
    for i in range(3):
        create(alice, proposal(content={"language": "zh", "text": f"中文回答 {i}"}))
    first = search(alice, "中文回答", "hybrid", limit=2).json()
    assert_envelope(
        search(alice, "中文回答", "hybrid", limit=2, cursor=first["next"], minScore=0.0), 400, "invalid_request"
    )


# --- pagination, isolation, validation --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_search_pages_with_a_cursor_bound_to_its_query(alice, mode):
    created = {create(alice, proposal(content={"language": "zh", "text": f"中文回答 {i}"}))["id"] for i in range(3)}
    first = search(alice, "中文回答", mode, limit=2).json()
    assert len(first["results"]) == 2 and first["next"]
    rest = search(alice, "中文回答", mode, limit=2, cursor=first["next"]).json()
    assert rest["next"] is None
    assert {r["id"] for r in first["results"] + rest["results"]} == created
    assert_envelope(search(alice, "another query", mode, cursor=first["next"]), 400, "invalid_request")


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_search_is_scoped_to_the_user_and_the_product(alice, bob, mode):
    create(alice)
    assert ids(search(alice, "中文回答", mode, user="u2")) == []
    assert ids(search(bob, "中文回答", mode)) == []
    assert len(ids(search(alice, "中文回答", mode))) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"query": "中文"},
        {"query": "中文", "mode": "fuzzy"},
        {"query": "", "mode": "keyword"},
        {"query": "中文", "mode": "keyword", "limit": 0},
        {"query": "中文", "mode": "keyword", "limit": "5"},
        {"query": 5, "mode": "keyword"},
        {"query": "中文", "mode": "keyword", "cursor": "!!"},
        {"query": "中文", "mode": "keyword", "cursor": "WzFd"},
        {"query": "中文", "mode": "semantic", "cursor": "e30"},
        {"query": "中文", "mode": "hybrid", "minScore": 1.5},
        {"query": "中文", "mode": "hybrid", "minScore": "0.2"},
    ],
)
def test_bad_search_requests_are_400(alice, body):
    assert_envelope(alice.post(f"{memories_url()}/search", body), 400, "invalid_request")


@pytest.mark.requires_postgres
def test_postgres_keyword_search_reads_the_ranking_and_its_rows_in_one_statement(alice):
    zh = create(alice, ZH_LANGUAGE)
    search(alice, "中文回答", "keyword")  # the product's kinds are in the working set from here on
    with CaptureQueriesContext(connection) as sent:
        response = search(alice, "中文回答", "keyword")
    assert ids(response) == [zh["id"]] and response.json()["results"][0]["content"] == zh["content"]
    statements = [q["sql"] for q in sent.captured_queries if "memories_longtermmemory" in q["sql"]]
    assert len(statements) == 1 and "search_tsv" in statements[0], statements


@pytest.mark.requires_postgres
def test_postgres_keeps_an_hnsw_cosine_index_and_a_stored_keyword_vector_under_gin(alice):
    create(alice)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories_longtermmemory'")
        indexes = dict(cursor.fetchall())
    hnsw = [d for d in indexes.values() if "USING hnsw" in d]
    assert len(hnsw) == 1 and "vector_cosine_ops" in hnsw[0] and "embedding_index_id" in hnsw[0]
    assert "USING gin (search_tsv)" in indexes["longterm_keyword_tsv_gin"]
    assert "longterm_keyword_gin" not in indexes  # the expression index the stored column replaced
    with connection.cursor() as cursor:  # the stored keyword vector: the 'simple' configuration of search_text
        cursor.execute(
            "SELECT bool_and(search_tsv = to_tsvector('simple'::regconfig, search_text)), count(*) "
            "FROM memories_longtermmemory"
        )
        assert cursor.fetchone() == (True, 1)
